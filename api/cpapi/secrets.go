package cpapi

import "time"

// SecretRequest is the body of PUT /v1/secrets/{name}: the value to store,
// encrypted, under that name (1-128 letters, digits and '_', not starting
// with a digit; the value at most 64 KiB of UTF-8 without NUL bytes).
type SecretRequest struct {
	Value string `json:"value"`
}

// Secret describes a tenant's secret. The API never returns a value: jobs
// receive them (JobRequest.Secrets, Repo.Secret), people do not.
type Secret struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SecretList is GET /v1/secrets, by name.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}
