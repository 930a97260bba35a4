// What the front keeps of a slot process's stdout and stderr: lines, each cut to a
// maximum as it arrives, so that output without a newline costs bounded memory.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { LineSplitter, readBoundedLines, type OutputLine } from '../../../src/front/child-guard/output-lines.js';

test('lines are split on \\n (and \\r\\n), whatever the chunks', () => {
  const lines: OutputLine[] = [];
  const s = new LineSplitter(100, (l) => lines.push(l));
  s.push('one\ntw');
  s.push('o\r\nthr');
  s.push('ee\n');
  s.push('four');
  s.end();
  assert.deepEqual(
    lines.map((l) => l.text),
    ['one', 'two', 'three', 'four'],
  );
  assert.ok(lines.every((l) => l.cutChars === 0));
});

test('a slot process writing 64 MiB without a newline: at most the maximum is held, the rest is counted', () => {
  const lines: OutputLine[] = [];
  const s = new LineSplitter(4096, (l) => lines.push(l));
  const chunk = 'x'.repeat(65_536);
  let most = 0;
  for (let i = 0; i < 1024; i++) {
    s.push(chunk);
    most = Math.max(most, s.held);
  }
  assert.equal(most, 4096, 'never more than the maximum held');
  assert.equal(lines.length, 0, 'no line yet: it has not ended');
  s.push('\nnext\n');
  assert.equal(lines.length, 2);
  assert.equal(lines[0]?.text, 'x'.repeat(4096));
  assert.equal(lines[0]?.cutChars, 1024 * 65_536 - 4096);
  assert.deepEqual(lines[1], { text: 'next', cutChars: 0 });
});

test('a stream: multi-byte characters split across chunks arrive whole, and the last line without end is read', async () => {
  const input = new PassThrough();
  const lines: OutputLine[] = [];
  readBoundedLines(input, 100, (l) => lines.push(l));
  const bytes = Buffer.from('é\nlast é');
  input.write(bytes.subarray(0, 1));
  input.write(bytes.subarray(1));
  input.end();
  await new Promise((r) => input.once('end', r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => l.text),
    ['é', 'last é'],
  );
});
