// Vite builds the UI into internal/webui/static/dist, which the Go package
// internal/webui embeds (go:embed) into the corral binary. React's JSX is
// compiled by Vite's own esbuild (no Babel plugin: the UI needs no fast
// refresh magic, and it keeps the dependency tree small).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  esbuild: { jsx: "automatic" },
  build: {
    outDir: "../internal/webui/static/dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
    target: "es2022",
  },
  server: {
    // `npm run dev` proxies the API to a running `corral up`.
    proxy: {
      "/v1": { target: process.env.CORRAL_URL ?? "http://127.0.0.1:7070", ws: true, changeOrigin: true },
      "/openapi.json": { target: process.env.CORRAL_URL ?? "http://127.0.0.1:7070" },
    },
  },
});
