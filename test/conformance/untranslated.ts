// Puppeteer's tests (pinned in upstream/) that no case of ours translates, each
// with its reason: one of a small fixed set, and a line saying what in the test
// puts it there. test/unit/conformance-upstream.test.ts fails when an upstream
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
  'ariaqueryhandler: queryOne should find 2nd element by name': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should persist query handler bindings across navigations': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should work with removed MutationObserver': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should work when node is added through innerHTML': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) Page.waitForSelector is shortcut for main frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should run in specified frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should throw when frame is detached': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should survive cross-process navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should wait for visible': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should wait for visible recursively': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) hidden should wait for visibility: hidden': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) hidden should wait for display: none': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'ariaqueryhandler: waitForSelector (aria) should have an error message specifically for awaiting an element to be hidden':
    { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'ariaqueryhandler: waitForSelector (aria) should have correct stack trace for timeout': {
    reason: 'not-page-level',
    text: "Asserts that the stack names Puppeteer's own source file (WaitTask.ts) as Mocha maps it.",
  },
  'click: should click the button if window.Node is removed': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should click on a span with an inline element inside': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should not throw UnhandledPromiseRejection when page closes': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'click: should scroll and click with disabled javascript': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should click when one of inline box children is outside of viewport': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should not hang with touch-enabled viewports': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should click a rotated button': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'click: should fire aux event on middle click': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'click: should fire back click': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'click: should fire forward click': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'click: should click links which cause navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should click the button with fixed position inside an iframe': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'click: should click the button with deviceScaleFactor set': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'cookies: Page.cookies should not get cookies from subdomain': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'cookies: Page.cookies should get cookies from nested path': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'cookies: Page.cookies should not get cookies from not nested path': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'cookies: Page.setCookie should isolate cookies in browser contexts': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'cookies: Page.setCookie should set secure same-site cookies from a frame': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'cookies: Page.deleteCookie should not delete cookie for different domain': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'cookies: Page.deleteCookie should delete cookie for specified URL': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'cookies: Page.deleteCookie should delete cookie for specified URL regardless of the current page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boundingBox should handle nested frames': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boundingBox should force a layout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boundingBox should work with SVG nodes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boxModel should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boxModel should return null for invisible elements': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.boxModel should correctly compute box model with offsets': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should return Point data': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should work for Shadow DOM v1': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should not work for TextNodes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should throw for hidden nodes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should throw for recursively hidden nodes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.click should throw for <br> elements': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.touchStart should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.touchStart should work with the returned Touch': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.touchMove should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.touchMove should work with a pre-existing Touch': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.touchEnd should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.clickablePoint should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.clickablePoint should not work if the click box is not visible': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.clickablePoint should not work if the click box is not visible due to the iframe': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.clickablePoint should work for iframes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: Element.waitForSelector should wait correctly with waitForSelector on an element': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: Element.waitForSelector should wait correctly with waitForSelector and xpath on an element': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.isIntersectingViewport should work with threshold': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.isIntersectingViewport should work with threshold of 1': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'elementhandle: ElementHandle.isIntersectingViewport should work with svg elements': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'emulation: Page.viewport should support mobile emulation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should support touch emulation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should be detectable by Modernizr': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should detect touch when applying viewport with touches': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should support landscape emulation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should update media queries when resoltion changes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.viewport should load correct pictures when emulation dpr': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.emulate should support clicking': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.emulateMediaType should throw in case of bad argument': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.emulateMediaFeatures should throw in case of bad argument': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.emulateVisionDeficiency should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'emulation: Page.emulateVisionDeficiency should throw for invalid vision deficiencies': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Page.evaluate should accept "null" as one of multiple parameters': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Page.evaluate should return promise as empty object': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Page.evaluate should throw if elementHandles are from other frames': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Page.evaluate should return properly serialize objects with unknown type fields': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Page.evaluateOnNewDocument should work with CSP': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Frame.evaluate should have different execution contexts': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'evaluation: Frame.evaluate should execute after cross-site navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame.evaluateHandle should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'frame: Frame.evaluate should throw for detached frames': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame.evaluate allows readonly array to be an argument': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame.page should retrieve the page from a frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should send events when frames are manipulated dynamically': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should send "framenavigated" when navigating on anchor URLs': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should persist mainFrame on cross-process navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should not send attach/detach events for main frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should detach child frames on navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should support framesets': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should report frame from-inside shadow DOM': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should report frame.name()': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should report frame.parent()': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should report different frame instance when frame re-attaches': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'frame: Frame Management should support url fragment': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'jshandle: Page.evaluateHandle should accept object handle as an argument': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: Page.evaluateHandle should accept object handle to primitive types': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: Page.evaluateHandle should accept object handle to unserializable value': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: Page.evaluateHandle should use the same JS wrappers': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.jsonValue works with jsonValues that are not objects': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.jsonValue works with jsonValues that are primitives': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.jsonValue should not throw for circular objects': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.getProperties should return even non-own properties': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.asElement should return ElementHandle for TextNodes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'jshandle: JSHandle.toString should work with different subtypes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'keyboard: should trigger commands of keyboard shortcuts': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'locator: Locator.click should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'locator: Locator.click should retry clicks on errors': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'locator: Locator.click should work with a OOPIF': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'locator: Locator.fill should work for textarea': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'locator: Locator.prototype.clone should work internally with delegated locators': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'mouse: should throw if buttons are pressed incorrectly': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should return response when page changes its URL after load': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should return response when page replaces its state during load': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work with subframes return 204': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should fail when server returns 204': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should navigate to empty page with domcontentloaded': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work when page calls history API in beforeunload': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work when reload causes history API in beforeunload': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should navigate to empty page with networkidle0': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should navigate to page with iframe and networkidle0': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should navigate to empty page with networkidle2': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'navigation: Page.goto should fail when exceeding default maximum navigation timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should fail when exceeding default maximum timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should prioritize default navigation timeout over default timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should disable timeout when its set to 0': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work when navigating to valid url': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work when navigating to a URL with a client redirect': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should not throw an error for a 404 response with an empty body': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should not throw an error for a 500 response with an empty body': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should return last response in redirect chain': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should wait for network idle to succeed navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'navigation: Page.goto should navigate to dataURL and fire dataURL requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should navigate to URL with hash and fire requests without hash': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should work with self requesting page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.goto should fail when navigating and show the url at the error message': {
    reason: 'other-server',
    text: 'Needs the HTTPS fixture server with a self-signed certificate.',
  },
  'navigation: Page.waitForNavigation should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.waitForNavigation should work with both domcontentloaded and load': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.waitForNavigation should work with clicking on anchor links': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.waitForNavigation should work with history.replaceState()': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.waitForNavigation should work with DOM history.back()/history.forward()': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Page.waitForNavigation should work when subframe issues window.stop()': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Frame.goto should reject when frame detaches': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Frame.goto should return matching responses': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Frame.waitForNavigation should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'navigation: Frame.waitForNavigation should fail when frame detaches': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.Events.Request should fire for navigation requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.Events.Request should fire for iframes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.Events.Request should fire for fetches': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.frame should work for main frame navigation request': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.frame should work for subframe navigation request': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.frame should work for fetch requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.headers should define Browser in user agent header': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.headers should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Request.initiator should return the initiator': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.fromCache should return |false| for non-cached content': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.fromCache should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Response.fromServiceWorker should return |false| for non-service-worker content': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.fromServiceWorker Response.fromServiceWorker': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.postData should be |undefined| when there is no post data': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.postData should work with blobs': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.text should return uncompressed text': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.text should throw when requesting body of redirected response': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.text should wait until response completes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.buffer should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Response.buffer should work with compression': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.buffer should throw if the response does not have a body': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.statusText should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Response.statusText handles missing status text': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Network Events Page.Events.Request': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Network Events Page.Events.Response': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Network Events Page.Events.RequestFailed': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Network Events Page.Events.RequestFinished': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Network Events should fire events in proper order': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Network Events should support redirects': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.isNavigationRequest should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.isNavigationRequest should work with request interception': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.isNavigationRequest should work when navigating to image': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.authenticate should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'network: Page.authenticate should fail if wrong credentials': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.authenticate should allow disable authentication': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Page.authenticate should not disable caching': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: raw network headers Same-origin set-cookie navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: raw network headers Same-origin set-cookie subresource': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: raw network headers Cross-origin set-cookie': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'network: Page.setBypassServiceWorker bypass for network': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.resourceType should work for document type': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Request.resourceType should work for stylesheets': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'network: Response.remoteAddress should support redirects': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'page: Page.Events.Load should fire when expected': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: removing and adding event handlers should correctly fire event handlers as they are added and then removed': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: removing and adding event handlers should correctly added and removed request events': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'page: Page.setOfflineMode should emulate navigator.onLine': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'page: Page.Events.DOMContentLoaded should fire when expected': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.metrics should get metrics from a page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForRequest should work with predicate': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForRequest should work with async predicate': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForRequest should respect timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForRequest should work with no timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForResponse should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.waitForResponse should respect timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForResponse should work with async predicate': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForResponse should work with no timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForNetworkIdle should work': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.waitForNetworkIdle should respect timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForNetworkIdle should respect idleTime': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForNetworkIdle should work with no timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForNetworkIdle should work with aborted requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForNetworkIdle should work with delayed response': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.waitForFrame should work with a URL predicate': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should be callable from-inside evaluateOnNewDocument': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should survive navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should await returned promise': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should await returned if called from function': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should work on frames': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should work with loading frames': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should work on frames before navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should not throw when frames detach': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should work with complex objects': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.exposeFunction should be called once': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setUserAgent should work for subframes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setUserAgent should emulate device user-agent': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setUserAgent should restore original': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setContent should work with HTML 4 doctype': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setContent should respect timeout': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.setContent should respect default navigation timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setContent should await resources to load': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setContent should work fast enough': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.setContent should work with tricky content': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setContent should work with comments outside HTML tag': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setBypassCSP should bypass CSP header': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setBypassCSP should bypass after cross-process navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setBypassCSP should bypass CSP in iframes as well': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should work with a url': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should work with a url and type=module': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should work with a path and type=module': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addScriptTag should work with a content and type=module': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should throw an error if loading from url fail': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should work with a path': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addScriptTag should include sourcemap when path is provided': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addScriptTag should add id when provided': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should throw when added with content to the CSP page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addScriptTag should throw when added with URL to the CSP page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addStyleTag should work with a url': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.addStyleTag should throw an error if loading from url fail': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addStyleTag should work with a path': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addStyleTag should include sourcemap when path is provided': {
    reason: 'file-on-disk',
    text: 'The path option reads a file of the server into the page.',
  },
  'page: Page.addStyleTag should throw when added with content to the CSP page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.addStyleTag should throw when added with URL to the CSP page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setCacheEnabled should enable or disable the cache based on the state passed': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.setCacheEnabled should stay disabled when toggling request interception on/off': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.pdf can print to PDF and save to file': {
    reason: 'file-on-disk',
    text: 'pdf({path}) writes a file on the server.',
  },
  'page: Page.pdf can print to PDF and stream the result': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.pdf should respect timeout': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'page: Page.select should select only first option': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should not throw when select causes navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should respect event bubbling': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should throw when element is not a <select>': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should return an array of matched values': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should return an array of one element when multiple is not set': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should return [] on no values': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should deselect all options when passed no values for a multiple select': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should deselect all options when passed no values for a select without multiple': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'page: Page.select should work when re-defining top-level Event class': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'queryhandler: XPath selectors in Page should return empty array for non-existing element': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryhandler: P selectors should work with custom selectors': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryhandler: P selectors should work with custom selectors with args': {
    reason: 'process-wide',
    text: 'Puppeteer.registerCustomQueryHandler() registers a handler for the whole Puppeteer process, which every request shares.',
  },
  'queryhandler: P selectors should handle escapes': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: Page.$$eval should accept ElementHandles as arguments': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'queryselector: ElementHandle.$ should return null for non-existing element': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$eval should retrieve content from subtree': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$eval should throw in case of missing selector': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$$eval should retrieve content from subtree': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$$eval should not throw in case of missing selector': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$$ should query existing elements': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'queryselector: ElementHandle.$$ should return empty array for non-existing elements': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
  'requestinterception: Page.setRequestInterception should be able to remove headers': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with requests without networkId': {
    reason: 'not-page-level',
    text: 'Drives the page through a CDPSession of its own.',
  },
  'requestinterception: Page.setRequestInterception should work with redirect inside sync XHR': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with redirects for subresources': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with equal requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should be able to fetch dataURL and fire dataURL requests': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should navigate to URL with hash and fire requests without hash': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with encoded server': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with badly encoded server': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work wit h encoded server - 2': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should not throw "Invalid Interception Id" if the request was cancelled':
    { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'requestinterception: Page.setRequestInterception should throw if interception is not enabled': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should work with file URLs': {
    reason: 'file-on-disk',
    text: 'Navigates to a file: URL of the server.',
  },
  'requestinterception: Page.setRequestInterception should not cache if cache disabled': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should cache if cache enabled': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Page.setRequestInterception should load fonts if cache enabled': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should work': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should redirect in a way non-observable to page': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should amend method': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should amend post data': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should amend both post data and method on navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.continue should fail if the header value is invalid': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.respond should work with status code 422': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.respond should redirect': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.respond should allow mocking binary responses': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.respond should stringify intercepted request response headers': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'requestinterception: Request.respond should fail if the header value is invalid': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'screenshot: Page.screenshot should clip clip bigger than the viewport without "captureBeyondViewport"': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'screenshot: Page.screenshot should take fullPage screenshots without captureBeyondViewport': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'screenshot: Page.screenshot should run in parallel in multiple pages': {
    reason: 'browser-level',
    text: 'Needs other pages, targets or contexts of the browser (newPage, browser.pages, targetcreated, popups), which scripts do not get: they have their own page.',
  },
  'screenshot: ElementHandle.screenshot should work with a null viewport': {
    reason: 'second-browser',
    text: 'Launches a second browser (with other launch options) for the test.',
  },
  'screenshot: Cdp should use scale for clip': { reason: 'not-yet', text: 'A page-level test still to translate.' },
  'screenshot: Cdp should work in "fromSurface: false" mode': {
    reason: 'headful-only',
    text: 'Skipped by Puppeteer itself in headless mode; the service runs Chromium headless.',
  },
  'waittask: Frame.waitForFunction should work when resolved right before execution context disposal': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should poll on interval': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should poll on mutation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should poll on mutation async': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should poll on raf': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should poll on raf async': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should work with strict CSP policy': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should return the success value as a JSHandle': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should return the window as a success value': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should accept ElementHandle arguments': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should respect timeout': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should disable timeout when its set to 0': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should survive cross-process navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForFunction should survive navigations': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Page.waitForTimeout waits for the given timeout before resolving': {
    reason: 'removed-api',
    text: 'waitForTimeout() was removed in Puppeteer 22; a script waits with setTimeout.',
  },
  'waittask: Frame.waitForTimeout waits for the given timeout before resolving': {
    reason: 'removed-api',
    text: 'waitForTimeout() was removed in Puppeteer 22; a script waits with setTimeout.',
  },
  'waittask: Frame.waitForSelector should work with removed MutationObserver': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should work when node is added through innerHTML': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector Page.waitForSelector is shortcut for main frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should run in specified frame': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should throw when frame is detached': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should survive cross-process navigation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be visible (display)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be visible (visibility)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be visible (bounding box)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be visible recursively': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be hidden (visibility)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be hidden (display)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be hidden (bounding box)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should wait for element to be hidden (removal)': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should return null if waiting to hide non-existing element': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should have an error message specifically for awaiting an element to be hidden': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should respond to node attribute mutation': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
  },
  'waittask: Frame.waitForSelector should return the element handle': {
    reason: 'not-yet',
    text: 'A page-level test still to translate.',
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
