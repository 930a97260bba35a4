// The service's version: package.json's, the one place it is written. tsup
// bundles the file into dist/server.js; tsx reads it in tests.
import pkg from '../../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
