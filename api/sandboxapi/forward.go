package sandboxapi

import "time"

// ForwardRequest is the body of POST /v1/forwards: listen on
// 127.0.0.1:ListenPort inside the sandbox (0 picks a free port) and pipe
// every connection to the unix socket Socket: a path in the sandbox's
// socket directory (/run/corral; symlinks may not lead out of it), or just
// a file name there. This is how a process inside a
// sandbox without network reaches a service the host offers there (the
// control plane's LLM gateway, for the agent CLIs).
type ForwardRequest struct {
	ListenPort int    `json:"listen_port"`
	Socket     string `json:"socket"`
}

// Forward is a TCP-to-unix-socket forward.
type Forward struct {
	ID        string    `json:"id"`
	Port      int       `json:"port"`    // on 127.0.0.1
	Address   string    `json:"address"` // "127.0.0.1:port"
	Socket    string    `json:"socket"`  // absolute
	CreatedAt time.Time `json:"created_at"`
	// Active counts the connections open now; Total every one accepted.
	Active int64 `json:"active"`
	Total  int64 `json:"total"`
}

// ForwardList is the body of GET /v1/forwards.
type ForwardList struct {
	Forwards []Forward `json:"forwards"`
}
