// SECURITY/OPS: never download a browser. pagescript uses the system Chromium
// (Debian's `chromium` package) or PUPPETEER_EXECUTABLE_PATH; see scripts/bootstrap.mjs.
module.exports = { skipDownload: true };
