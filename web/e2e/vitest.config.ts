// The end-to-end suite: a real `corral up` (started by the Go harness,
// internal/webui/e2e_test.go, which passes its address in CORRAL_E2E_URL)
// driven through Debian's Chromium by playwright-core. One browser, tests
// in order, generous timeouts (real sandboxes, real jobs).
import { defineConfig } from "vitest/config";

export default defineConfig({
  cacheDir: "../node_modules/.vite", // with the rest of node_modules, not in e2e/
  test: {
    root: "e2e",
    environment: "node",
    include: ["**/*.e2e.ts"],
    fileParallelism: false,
    sequence: { concurrent: false },
    testTimeout: 180_000,
    hookTimeout: 120_000,
    reporters: ["verbose"],
  },
});
