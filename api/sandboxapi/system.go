package sandboxapi

// Health is the body of GET /v1/health.
type Health struct {
	Status   string `json:"status"`
	Version  string `json:"version"`
	UptimeMS int64  `json:"uptime_ms"`
}

// Info is the body of GET /v1/info. Limits are 0 when there is none.
type Info struct {
	Hostname         string  `json:"hostname"`
	CPUs             float64 `json:"cpus"`               // usable CPUs: the cgroup quota, else the online count
	MemoryLimitBytes int64   `json:"memory_limit_bytes"` // cgroup limit, else total RAM
	MemoryUsedBytes  int64   `json:"memory_used_bytes"`
	DiskTotalBytes   int64   `json:"disk_total_bytes"` // of the filesystem holding --root
	DiskFreeBytes    int64   `json:"disk_free_bytes"`
	Processes        int     `json:"processes"` // running managed processes
	Version          string  `json:"version"`
}

// Port is one listening TCP socket.
type Port struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
}

// PortList is the body of GET /v1/ports.
type PortList struct {
	Ports []Port `json:"ports"`
}
