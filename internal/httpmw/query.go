package httpmw

import (
	"net/url"
	"strings"
)

// WithoutQueryParam returns rawQuery without any name=... pair, keeping the
// other pairs as sent (order and escaping untouched). Servers use it to
// drop access_token before a query is logged or forwarded.
func WithoutQueryParam(rawQuery, name string) string {
	if rawQuery == "" {
		return rawQuery
	}
	parts := strings.Split(rawQuery, "&")
	kept := parts[:0]
	for _, p := range parts {
		key, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(key); err == nil && k == name {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}
