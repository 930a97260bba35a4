// Frames, and what Page shares with them: navigation (URLs checked like every
// navigation), content, waits, and script and style tags whose URLs are checked
// the same way.
import type { Frame } from 'puppeteer';
import { ProtocolError } from 'puppeteer';
import { GOTO, NAV, WAIT_FUNCTION } from '../option-schemas.js';
import { isPlainObject, options, str } from '../options.js';
import type { MethodContext, Table } from './context.js';
import { locatorTarget, newLocator } from './locator.js';
import { actions, queries } from './queries.js';

function tagOptions(v: unknown, label: string, c: MethodContext, withType: boolean): Record<string, string> {
  // Not an options object (a URL string, say): as to Puppeteer, one without url or content,
  // which Puppeteer refuses in its own words.
  if (!isPlainObject(v)) return {};
  const schema = withType
    ? { url: 'string', content: 'string', type: 'string', id: 'string' }
    : { url: 'string', content: 'string' };
  // Neither url nor content: Puppeteer itself refuses, with its own message.
  return options(v, schema as never, c.clock, label) as Record<string, string>;
}

/** A tag's url, relative to the frame's document as in the page, checked like a navigation. */
async function tagUrl(
  o: Record<string, string>,
  base: string,
  label: string,
  c: MethodContext,
): Promise<Record<string, string>> {
  if (o.url === undefined) return o;
  let absolute = o.url;
  try {
    absolute = new URL(o.url, base).href;
  } catch {
    // Not resolvable: navigationUrl refuses it with its own message.
  }
  o.url = await c.navigationUrl(absolute, label);
  return o;
}

/**
 * A URL to navigate to that is no URL at all ("asdfasdf") is refused with the
 * protocol error Puppeteer passes on from Chromium, which cannot navigate to it
 * either. SECURITY: it is never handed to Chromium, whose URL parser is not the
 * one the scheme check (navigationUrl) reads it with.
 */
export function gotoUrl(v: unknown): unknown {
  if (typeof v === 'string' && v !== 'about:blank' && !URL.canParse(v))
    throw new ProtocolError('Protocol error (Page.navigate): Cannot navigate to invalid URL');
  return v;
}

/** The methods Page and Frame share; frameElement is Frame's alone. */
export function frameMethods(label: string): Table<Frame> {
  return {
    ...queries<Frame>(label),
    ...actions<Frame>(label),
    goto: async (f, [url, opts], c) =>
      f.goto(await c.navigationUrl(gotoUrl(url), `${label}.goto`), options(opts, GOTO, c.clock, `${label}.goto`)),
    title: (f) => f.title(),
    content: (f) => f.content(),
    // What the HTML makes (frames, a meta refresh, fetches) is the page's, weighed as such (docs/security.md "The score").
    setContent: (f, [html, opts], c) =>
      f.setContent(str(html, `${label}.setContent: html`), options(opts, NAV, c.clock, `${label}.setContent`)),
    waitForFunction: (f, [fn, opts, ...rest], c) =>
      f.waitForFunction(
        c.pageFunction(fn, `${label}.waitForFunction`) as never,
        options(opts, WAIT_FUNCTION, c.clock, `${label}.waitForFunction`),
        ...(c.pageArgs(rest, `${label}.waitForFunction`) as never[]),
      ),
    waitForNavigation: (f, [opts], c) => f.waitForNavigation(options(opts, NAV, c.clock, `${label}.waitForNavigation`)),
    // No options at all: Puppeteer refuses before doing anything, in its own words.
    addScriptTag: async (f, [opts], c) =>
      f.addScriptTag(
        opts === undefined || opts === null
          ? (opts as never)
          : await tagUrl(tagOptions(opts, `${label}.addScriptTag`, c, true), f.url(), `${label}.addScriptTag`, c),
      ),
    addStyleTag: async (f, [opts], c) =>
      f.addStyleTag(
        opts === undefined || opts === null
          ? (opts as never)
          : await tagUrl(tagOptions(opts, `${label}.addStyleTag`, c, false), f.url(), `${label}.addStyleTag`, c),
      ),
  };
}

export const FRAME: Table<Frame> = {
  ...frameMethods('frame'),
  frameElement: (f) => f.frameElement(),
};

export const FRAME_SYNC: Table<Frame> = {
  url: (f) => f.url(),
  name: (f) => f.name(),
  parentFrame: (f) => f.parentFrame(),
  childFrames: (f) => f.childFrames(),
  isDetached: (f) => f.detached,
  detached: (f) => f.detached,
  page: (f) => f.page(),
  locator: (f, [sel], c) => newLocator(f.locator(locatorTarget(sel, 'frame.locator', c) as never), c),
};
