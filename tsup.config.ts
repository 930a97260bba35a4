import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The service: the front (server) and the script executor it forks, run by Node 24.
    entry: { server: 'src/server.ts', executor: 'src/executor.ts' },
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
