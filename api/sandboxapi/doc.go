// Package sandboxapi holds the wire types of the sandbox daemon API
// (DESIGN.md §2): the JSON bodies and the WebSocket frame format that
// `corral sandboxd` serves and the client SDK speaks. Both sides use these
// types, so the contract has one definition in Go.
package sandboxapi
