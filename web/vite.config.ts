// Vite builds the app to web/dist, which `roofline serve --web-dir web/dist` serves.
// In development (`npx vite`), API calls go to a roofline server on port 8000.
import { defineConfig } from 'vite';

export default defineConfig({
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 600 },
  server: { proxy: { '/api': 'http://127.0.0.1:8000', '/healthz': 'http://127.0.0.1:8000' } },
});
