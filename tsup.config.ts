import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The service: the front (server) and the two processes it forks (the script
    // slot process and the egress process), run by Node 24.
    entry: { server: 'src/front/server.ts', slot: 'src/slot/main.ts', 'egress-process': 'src/egress/main.ts' },
    format: ['esm'],
    platform: 'node',
    target: 'node24',
    outDir: 'dist',
    clean: false,
    sourcemap: true,
  },
  {
    // Evaluated inside each request's V8 isolate: no Node, no DOM.
    entry: { runtime: 'sandbox/runtime.ts' },
    format: ['iife'],
    // Strict mode: no sloppy functions for a script to reach through stack frames.
    banner: { js: '"use strict";' },
    platform: 'browser',
    target: 'es2023',
    outDir: 'dist/sandbox',
    noExternal: [/.*/],
    minify: true,
    clean: false,
  },
  {
    entry: { cheerio: 'sandbox/cheerio.ts' },
    format: ['iife'],
    platform: 'browser',
    target: 'es2023',
    outDir: 'dist/sandbox',
    noExternal: [/.*/],
    minify: true,
    clean: false,
  },
  {
    // The playground page's script and stylesheet (GET /playground), CodeMirror
    // included: served by the service itself, nothing loaded from elsewhere.
    entry: { playground: 'playground/main.ts' },
    format: ['iife'],
    platform: 'browser',
    target: 'es2022',
    outDir: 'dist/playground',
    noExternal: [/.*/],
    minify: true,
    clean: false,
  },
]);
