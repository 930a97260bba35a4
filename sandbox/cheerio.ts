// cheerio, bundled for the isolate (tsup → dist/sandbox/cheerio.js) from the npm
// package's browser build, so that parsing happens under the isolate's memory cap.
import * as cheerio from 'cheerio';

Object.defineProperty(globalThis, 'cheerio', { value: cheerio, writable: true, configurable: true, enumerable: false });
