import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

// In `npm run dev`, requests to /v1 go to the gateway (COACHGW_URL, default :8080), so the app
// needs no CORS. A built app served elsewhere names the gateway with ?gateway=<url> instead, and
// the gateway must allow the app's origin (COACH_CORS_ORIGINS).
const gateway = process.env.COACHGW_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [vue()],
  server: { proxy: { '/v1': gateway } },
  preview: { proxy: { '/v1': gateway } },
});
