package runtime

import (
	"debug/elf"
	"fmt"
	"os"
)

// SandboxdArgs is the command every backend runs as the sandbox's init:
// the mounted corral binary serving on the mounted socket directory. The
// token goes in the environment as CORRAL_SANDBOX_TOKEN (sandboxd removes
// it from what its children inherit).
func SandboxdArgs() []string {
	return []string{BinaryPath, "sandboxd", "--listen", "unix:" + SocketPath, "--root", "/"}
}

// TokenEnv is the variable carrying sandboxd's token.
const TokenEnv = "CORRAL_SANDBOX_TOKEN"

// StaticBinary returns path if it is a statically linked ELF executable,
// the only kind that runs inside any image. With path "", it checks the
// running executable.
func StaticBinary(path string) (string, error) {
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find own executable: %w", err)
		}
		path = self
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("corral binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("corral binary %s is dynamically linked; build it with CGO_ENABLED=0 to mount it into sandboxes", path)
		}
	}
	return path, nil
}
