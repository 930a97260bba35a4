// UTF-8 TextEncoder and TextDecoder for the isolate (V8 alone has neither).

export class TextEncoder {
  get encoding(): string {
    return 'utf-8';
  }

  encode(input = ''): Uint8Array {
    const s = String(input);
    const out: number[] = [];
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  }
}

export class TextDecoder {
  readonly #fatal: boolean;

  constructor(label = 'utf-8', options: { fatal?: boolean } = {}) {
    const l = String(label).toLowerCase();
    if (l !== 'utf-8' && l !== 'utf8') throw new RangeError(`TextDecoder: only utf-8 is supported, not "${label}"`);
    this.#fatal = options.fatal === true;
  }

  get encoding(): string {
    return 'utf-8';
  }

  decode(input?: ArrayBuffer | ArrayBufferView): string {
    if (input === undefined) return '';
    const b =
      input instanceof ArrayBuffer
        ? new Uint8Array(input)
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    let out = '';
    const bad = (): number => {
      if (this.#fatal) throw new TypeError('The encoded data was not valid for encoding utf-8');
      return 0xfffd;
    };
    for (let i = 0; i < b.length;) {
      const c = b[i++] as number;
      let cp: number;
      if (c < 0x80) cp = c;
      else if (c >= 0xc2 && c < 0xe0 && i < b.length && ((b[i] as number) & 0xc0) === 0x80) {
        cp = ((c & 31) << 6) | ((b[i++] as number) & 63);
      } else if (
        c >= 0xe0 &&
        c < 0xf0 &&
        i + 1 < b.length &&
        ((b[i] as number) & 0xc0) === 0x80 &&
        ((b[i + 1] as number) & 0xc0) === 0x80
      ) {
        cp = ((c & 15) << 12) | (((b[i] as number) & 63) << 6) | ((b[i + 1] as number) & 63);
        i += 2;
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) cp = bad();
      } else if (
        c >= 0xf0 &&
        c < 0xf5 &&
        i + 2 < b.length &&
        ((b[i] as number) & 0xc0) === 0x80 &&
        ((b[i + 1] as number) & 0xc0) === 0x80 &&
        ((b[i + 2] as number) & 0xc0) === 0x80
      ) {
        cp =
          ((c & 7) << 18) |
          (((b[i] as number) & 63) << 12) |
          (((b[i + 1] as number) & 63) << 6) |
          ((b[i + 2] as number) & 63);
        i += 3;
        if (cp < 0x10000 || cp > 0x10ffff) cp = bad();
      } else cp = bad();
      out += String.fromCodePoint(cp);
    }
    return out;
  }
}
