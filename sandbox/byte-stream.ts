// A readable stream over bytes the script already holds, made in the isolate:
// what page.createPDFStream() answers. Puppeteer's is a web ReadableStream fed
// from Chromium; a host stream is a live object and never crosses, so the
// bytes come whole (page.pdf's, with its bounds) and are read here in chunks.

/** Puppeteer reads a PDF from Chromium in chunks of this size (IO.read's default). */
const CHUNK_BYTES = 64 * 1024;

type ReadResult = { done: false; value: Uint8Array } | { done: true; value: undefined };

/** The subset of ReadableStream<Uint8Array> a script reads a PDF with: getReader(), cancel(), for await. */
export class ByteStream {
  #bytes: Uint8Array | undefined;
  #offset = 0;
  #reader: ByteStreamReader | undefined;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  get locked(): boolean {
    return this.#reader !== undefined;
  }

  getReader(): ByteStreamReader {
    if (this.#reader) throw new TypeError('ReadableStream is locked to a reader');
    this.#reader = new ByteStreamReader(this);
    return this.#reader;
  }

  cancel(): Promise<void> {
    if (this.#reader) return Promise.reject(new TypeError('ReadableStream is locked to a reader'));
    this.#bytes = undefined;
    return Promise.resolve();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, undefined> {
    const reader = this.getReader();
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      reader.releaseLock();
    }
  }

  /** The next chunk, for the reader; none once every byte was read or the stream was cancelled. */
  next(): ReadResult {
    const bytes = this.#bytes;
    if (bytes === undefined || this.#offset >= bytes.length) {
      this.#bytes = undefined;
      return { done: true, value: undefined };
    }
    const value = bytes.slice(this.#offset, this.#offset + CHUNK_BYTES);
    this.#offset += value.length;
    return { done: false, value };
  }

  /** For the reader: it lets go, or cancels. */
  release(reader: ByteStreamReader, cancel: boolean): void {
    if (this.#reader === reader) this.#reader = undefined;
    if (cancel) this.#bytes = undefined;
  }
}

export class ByteStreamReader {
  #stream: ByteStream | undefined;

  constructor(stream: ByteStream) {
    this.#stream = stream;
  }

  read(): Promise<ReadResult> {
    if (this.#stream === undefined) return Promise.reject(new TypeError('the reader has been released'));
    return Promise.resolve(this.#stream.next());
  }

  cancel(): Promise<void> {
    this.#stream?.release(this, true);
    this.#stream = undefined;
    return Promise.resolve();
  }

  releaseLock(): void {
    this.#stream?.release(this, false);
    this.#stream = undefined;
  }
}
