package runtime

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
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

// SandboxdBinaryName is the slim build of corral (go build -tags slim:
// only sandboxd, attach, exec, version) that make build writes next to
// corral. Sandboxes run it when it is there: the daemon in every sandbox
// then links none of the control plane, engines or databases.
const SandboxdBinaryName = "corral-sandboxd"

// SandboxdBinary returns the binary to mount into sandboxes: the slim
// corral-sandboxd next to the running executable if there is a static
// one, else the running executable itself (which must be static).
func SandboxdBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own executable: %w", err)
	}
	if slim, err := StaticBinary(filepath.Join(filepath.Dir(self), SandboxdBinaryName)); err == nil {
		return slim, nil
	}
	return StaticBinary(self)
}
