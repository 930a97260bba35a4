// The switches that close browser-wide channels must reach Chromium as written:
// Chromium keeps only the last value of a repeated switch, so a second
// --blink-settings (added by anyone later) would silently turn picture-in-picture
// back on (measured by a fresh-eyes attack: it did, on both binaries).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SHELL_IN_PROCESS_ARGS, chromiumArgs } from '../../../src/slot/browser/chromium-flags.js';
import { chromiumCommandLine } from '../../../src/slot/browser/chromium-process.js';

for (const headless of ['shell', true] as const) {
  test(`picture-in-picture stays off: exactly one --blink-settings, and it says so (headless ${String(headless)})`, () => {
    const line = chromiumCommandLine({ headless, args: chromiumArgs(40000), ignoreDefaultArgs: [] }, '/tmp/profile');
    const blink = line.filter((a) => a.startsWith('--blink-settings='));
    assert.equal(blink.length, 1, blink.join(' '));
    assert.ok(blink[0]?.split('=').slice(1).join('=').split(',').includes('pictureInPictureEnabled=false'), blink[0]);
    const disabled = line.filter((a) => a.startsWith('--disable-blink-features='));
    assert.equal(disabled.length, 1, disabled.join(' '));
    assert.match(disabled[0] ?? '', /DocumentPictureInPictureAPI/);
  });
}

test("the headless shell's in-process switches reach it merged: one --enable-features, and --disable-features keeps the guard's", () => {
  const line = chromiumCommandLine(
    { headless: 'shell', args: [...chromiumArgs(40000), ...SHELL_IN_PROCESS_ARGS], ignoreDefaultArgs: [] },
    '/tmp/profile',
  );
  assert.ok(line.includes('--in-process-gpu'));
  const enabled = line.filter((a) => a.startsWith('--enable-features='));
  assert.equal(enabled.length, 1, enabled.join(' '));
  assert.ok(enabled[0]?.split('=')[1]?.split(',').includes('NetworkServiceInProcess2'), enabled[0]);
  const disabled = line.filter((a) => a.startsWith('--disable-features='));
  assert.equal(disabled.length, 1, disabled.join(' '));
  for (const f of ['DnsOverHttps', 'AsyncDns', 'WebRtcHideLocalIpsWithMdns'])
    assert.ok(disabled[0]?.split('=')[1]?.split(',').includes(f), `${f} in ${disabled[0]}`);
});
