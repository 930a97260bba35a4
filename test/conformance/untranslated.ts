// Puppeteer's tests (pinned in upstream/) that no case of ours translates, each
// with its reason: one of a small fixed set, and a line saying what in the test
// puts it there. test/unit/repo/conformance-upstream.test.ts fails when an upstream
// test is neither translated nor listed here, when one listed here is translated
// after all, and when one listed here is not upstream.
export type Reason =
  /** Needs the Browser or the BrowserContext: other pages, targets, contexts, permissions, closing the page. */
  | 'browser-level'
  /** Reads or writes a file of the machine (uploadFile, FileChooser.accept, a path option, file: URLs). */
  | 'file-on-disk'
  /** Launches a second browser, or connects a second client to this one. */
  | 'second-browser'
  /** Runs only in a headful browser. */
  | 'headful-only'
  /** Needs a server other than the two fixture servers: HTTPS, a DNS name, a closed port, chrome:// pages. */
  | 'other-server'
  /** Registers state in the Puppeteer process that every request shares (custom query handlers). */
  | 'process-wide'
  /** Asserts on Puppeteer's internals or the test runner (CDPSession, private fields, spies, Node warnings, timings). */
  | 'not-page-level'
  /** The pinned upstream version tests an API our Puppeteer version no longer has ($x, waitForXPath, waitForTimeout). */
  | 'removed-api'
  /** Translatable: a case is still to be written. */
  | 'not-yet';

export interface Untranslated {
  readonly reason: Reason;
  readonly text: string;
}

export const UNTRANSLATED: Record<string, Untranslated> = {
  'ariaqueryhandler: waitForSelector (aria) should have correct stack trace for timeout': {
    reason: 'not-page-level',
    text: "Asserts that the stack names Puppeteer's own source file (WaitTask.ts) as Mocha maps it.",
  },
  'click: should not throw UnhandledPromiseRejection when page closes': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'console: measure performance': {
    reason: 'not-page-level',
    text: 'A latency measurement of 1,000 evaluate calls (an it.only in the pinned version), not a behaviour.',
  },
  'console: should trigger correct Log': {
    reason: 'other-server',
    text: 'Fetches from another host (domain2.test, http://wat): the egress guard and the fixture servers on 127.0.0.1 have no such host.',
  },
  'console: should have location when fetch fails': {
    reason: 'other-server',
    text: 'Fetches from another host (domain2.test, http://wat): the egress guard and the fixture servers on 127.0.0.1 have no such host.',
  },
  'console: should not throw when there are console messages in detached iframes': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'cookies: Page.setCookie should isolate cookies in browser contexts': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'cookies: Page.setCookie should set secure same-site cookies from a frame': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'elementhandle: Custom queries should register and unregister': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should throw with invalid query names': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should work for multiple elements': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should eval correctly': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should wait correctly with waitForSelector': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should wait correctly with waitForSelector on an element': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should work when both queryOne and queryAll are registered': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should eval when both queryOne and queryAll are registered': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: Custom queries should work with function shorthands': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'elementhandle: ElementHandle[Symbol.dispose] should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'elementhandle: ElementHandle[Symbol.asyncDispose] should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'elementhandle: ElementHandle.move should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'frame: Frame Management should support lazy frames': {
    reason: 'not-page-level',
    text: 'Reads the private frame._hasStartedLoading.',
  },
  'frame: Frame.client should return the client instance': {
    reason: 'not-page-level',
    text: 'Asserts on the CDPSession object, which scripts do not get.',
  },
  'input: Page.waitForFileChooser should work when file input is not attached to DOM': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: Page.waitForFileChooser should respect timeout': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: Page.waitForFileChooser should respect default timeout when there is no custom timeout': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: Page.waitForFileChooser should prioritize exact timeout over default timeout': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: Page.waitForFileChooser should work with no timeout': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: Page.waitForFileChooser should return the same file chooser when there are many watchdogs simultaneously': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should accept single file': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should be able to read selected file': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should be able to reset selected files with empty file list': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should not accept multiple files for single-file input': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should succeed even for non-existent files': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should error on read of non-existent files': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.accept should fail when accepting file chooser twice': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.cancel should cancel dialog': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.cancel should fail when canceling file chooser twice': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.isMultiple should work for single file pick': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.isMultiple should work for "multiple"': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'input: FileChooser.isMultiple should work for "webkitdirectory"': {
    reason: 'file-on-disk',
    text: 'page.waitForFileChooser() is refused: a file chooser exists to hand files of the server to the page (FileChooser.accept).',
  },
  'jshandle: Page.evaluateHandle should return the RemoteObject': {
    reason: 'not-page-level',
    text: 'remoteObject() is a DevTools protocol object, refused to scripts.',
  },
  'jshandle: JSHandle[Symbol.dispose] should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'jshandle: JSHandle[Symbol.asyncDispose] should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'jshandle: JSHandle.move should work': {
    reason: 'not-page-level',
    text: "Spies on the handle's own Symbol.dispose with sinon; the membrane's handles are proxies of ids.",
  },
  'navigation: Page.goto should fail when navigating to bad SSL': {
    reason: 'other-server',
    text: 'Needs the HTTPS fixture server with a self-signed certificate.',
  },
  'navigation: Page.goto should fail when navigating to bad SSL after redirects': {
    reason: 'other-server',
    text: 'Needs the HTTPS fixture server with a self-signed certificate.',
  },
  'navigation: Page.goto should fail when main resources failed to load': {
    reason: 'other-server',
    text: 'Navigates to a closed port of localhost, which the egress guard refuses before Chromium can connect.',
  },
  'navigation: Page.goto should not leak listeners during navigation': {
    reason: 'not-page-level',
    text: "Watches Node's process warnings of the test runner.",
  },
  'navigation: Page.goto should not leak listeners during bad navigation': {
    reason: 'not-page-level',
    text: "Watches Node's process warnings of the test runner.",
  },
  'navigation: Page.goto should not leak listeners during navigation of 11 pages': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'navigation: Page.goto should fail when navigating and show the url at the error message': {
    reason: 'other-server',
    text: 'Needs the HTTPS fixture server with a self-signed certificate.',
  },
  'network: raw network headers Cross-origin set-cookie': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'page: Page.close should reject all promises when page is closed': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.close should not be visible in browser.pages': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.close should run beforeunload if asked for': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.close should *not* run beforeunload by default': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.close should set the page close state': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.close should terminate network waiters': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.error should throw when page crashes': {
    reason: 'other-server',
    text: 'Navigates to chrome://crash, a browser page outside the egress allowlist.',
  },
  'page: Page.Events.Popup should work': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.Popup should work with noopener': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.Popup should work with clicking target=_blank and without rel=opener': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.Popup should work with clicking target=_blank and with rel=opener': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.Popup should work with fake-clicking target=_blank and rel=noopener': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.Events.Popup should work with clicking target=_blank and rel=noopener': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.setGeolocation should work': {
    reason: 'browser-level',
    text: 'Needs BrowserContext.overridePermissions to grant geolocation.',
  },
  'page: Page.Events.Console should trigger correct Log': {
    reason: 'other-server',
    text: 'Fetches from another host (domain2.test, http://wat): the egress guard and the fixture servers on 127.0.0.1 have no such host.',
  },
  'page: Page.Events.Console should have location when fetch fails': {
    reason: 'other-server',
    text: 'Fetches from another host (domain2.test, http://wat): the egress guard and the fixture servers on 127.0.0.1 have no such host.',
  },
  'page: Page.Events.Console should not throw when there are console messages in detached iframes': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.addScriptTag should work with a path and type=module': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addScriptTag should work with a path': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addScriptTag should include sourcemap when path is provided': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addStyleTag should work with a path': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addStyleTag should include sourcemap when path is provided': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.pdf can print to PDF and save to file': {
    reason: 'file-on-disk',
    text: 'pdf({path}) writes a file on the server.',
  },
  'page: Page.Events.Close should work with window.close': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.browser should return the correct browser instance': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.browserContext should return the correct browser context instance': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'page: Page.client should return the client instance': {
    reason: 'not-page-level',
    text: 'Asserts on the CDPSession object, which scripts do not get.',
  },
  'page: Page.bringToFront should work': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'queryhandler: P selectors should work with custom selectors': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryhandler: P selectors should work with custom selectors with args': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: Page.$x should query existing element': {
    reason: 'removed-api',
    text: 'page.$x() and elementHandle.$x() were removed in Puppeteer 22; the xpath/ selector replaces them (queryhandler: XPath selectors).',
  },
  'queryselector: Page.$x should return empty array for non-existing element': {
    reason: 'removed-api',
    text: 'page.$x() and elementHandle.$x() were removed in Puppeteer 22; the xpath/ selector replaces them (queryhandler: XPath selectors).',
  },
  'queryselector: Page.$x should return multiple elements': {
    reason: 'removed-api',
    text: 'page.$x() and elementHandle.$x() were removed in Puppeteer 22; the xpath/ selector replaces them (queryhandler: XPath selectors).',
  },
  'queryselector: ElementHandle.$x should query existing element': {
    reason: 'removed-api',
    text: 'page.$x() and elementHandle.$x() were removed in Puppeteer 22; the xpath/ selector replaces them (queryhandler: XPath selectors).',
  },
  'queryselector: ElementHandle.$x should return null for non-existing element': {
    reason: 'removed-api',
    text: 'page.$x() and elementHandle.$x() were removed in Puppeteer 22; the xpath/ selector replaces them (queryhandler: XPath selectors).',
  },
  'queryselector: QueryAll should have registered handler': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$ should query existing elements': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$ should return empty array for non-existing elements': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$eval should work': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$eval should accept extra arguments': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$eval should accept ElementHandles as arguments': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryselector: QueryAll $$eval should handle many elements': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'requestinterception: Page.setRequestInterception should work with requests without networkId': {
    reason: 'not-page-level',
    text: 'Drives the page through a CDPSession of its own.',
  },
  'requestinterception: Page.setRequestInterception should work with file URLs': {
    reason: 'file-on-disk',
    text: 'Navigates to a file: URL of the server.',
  },
  'screenshot: Page.screenshot should run in parallel in multiple pages': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'screenshot: ElementHandle.screenshot should work with a null viewport': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'screenshot: Cdp should work in "fromSurface: false" mode': {
    reason: 'headful-only',
    text: 'Skipped by Puppeteer itself in headless mode; the service runs Chromium headless.',
  },
  'waittask: Page.waitForTimeout waits for the given timeout before resolving': {
    reason: 'removed-api',
    text: 'waitForTimeout() was removed in Puppeteer 22; a script waits with setTimeout.',
  },
  'waittask: Frame.waitForTimeout waits for the given timeout before resolving': {
    reason: 'removed-api',
    text: 'waitForTimeout() was removed in Puppeteer 22; a script waits with setTimeout.',
  },
  'waittask: Frame.waitForSelector should have correct stack trace for timeout': {
    reason: 'not-page-level',
    text: "Asserts that the stack names Puppeteer's own source file (WaitTask.ts) as Mocha maps it.",
  },
  'waittask: Frame.waitForXPath should support some fancy xpath': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should respect timeout': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should run in specified frame': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should throw when frame is detached': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath hidden should wait for display: none': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath hidden should return null if the element is not found': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath hidden should return an empty element handle if the element is found': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should return the element handle': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should allow you to select a text node': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
  'waittask: Frame.waitForXPath should allow you to select an element with single slash': {
    reason: 'removed-api',
    text: 'frame.waitForXPath() was removed in Puppeteer 22; waitForSelector with xpath/ replaces it.',
  },
};
