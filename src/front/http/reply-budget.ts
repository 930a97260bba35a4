// How many bytes of replies the front holds while their readers take them.
// A reply stays in memory whole until its last byte is handed to the kernel,
// and a reader that takes a slice every REPLY_STALL_TIMEOUT_MS keeps it there
// for as long as it likes: without a bound, one key's slow readers could pin a
// reply of up to MAX_RESULT_BYTES per request it is allowed to make.

/** One reply being written: its owner (the key's name), its size, and how to cut it off. */
interface Held {
  readonly owner: string;
  readonly bytes: number;
  readonly cut: () => void;
}

export class ReplyBudget {
  readonly #capacityBytes: number;
  readonly #onCut: (owner: string, bytes: number) => void;
  /**
   * Replies held per owner, oldest first (a Set keeps insertion order). Keyed
   * by key names, which the operator makes, never by anything a client sends.
   */
  readonly #byOwner = new Map<string, Set<Held>>();
  readonly #heldBytes = new Map<string, number>();
  #total = 0;

  constructor(capacityBytes: number, onCut: (owner: string, bytes: number) => void = () => undefined) {
    this.#capacityBytes = capacityBytes;
    this.#onCut = onCut;
  }

  /** Bytes of replies held now. */
  get heldBytes(): number {
    return this.#total;
  }

  /**
   * Counts a reply of bytes for owner until the returned release is called
   * (idempotent). When the replies held pass the capacity, replies already
   * being written are cut off (cut is called) until they fit: always the
   * oldest of the owner holding the most bytes, never the reply just added.
   * SECURITY: so one key's slow readers push out that key's own replies first;
   * another key's reply is cut only when that key holds more than they do.
   */
  hold(owner: string, bytes: number, cut: () => void): () => void {
    const entry: Held = { owner, bytes, cut };
    let set = this.#byOwner.get(owner);
    if (set === undefined) {
      set = new Set();
      this.#byOwner.set(owner, set);
    }
    set.add(entry);
    this.#heldBytes.set(owner, (this.#heldBytes.get(owner) ?? 0) + bytes);
    this.#total += bytes;
    while (this.#total > this.#capacityBytes) {
      const victim = this.#victim(entry);
      if (victim === undefined) break;
      this.#remove(victim);
      this.#onCut(victim.owner, victim.bytes);
      victim.cut();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#remove(entry);
    };
  }

  /** The oldest reply of the owner holding the most bytes, the reply just added left out; undefined when none is left. */
  #victim(added: Held): Held | undefined {
    let best: Held | undefined;
    let bestBytes = -1;
    for (const [owner, set] of this.#byOwner) {
      // The arriving reply is not a candidate; its bytes still count for its owner.
      let oldest: Held | undefined;
      for (const h of set) {
        if (h !== added) {
          oldest = h;
          break;
        }
      }
      const held = this.#heldBytes.get(owner) ?? 0;
      if (oldest !== undefined && held > bestBytes) {
        best = oldest;
        bestBytes = held;
      }
    }
    return best;
  }

  #remove(h: Held): void {
    const set = this.#byOwner.get(h.owner);
    if (set?.delete(h) !== true) return;
    this.#total -= h.bytes;
    const left = (this.#heldBytes.get(h.owner) ?? 0) - h.bytes;
    if (set.size === 0) {
      this.#byOwner.delete(h.owner);
      this.#heldBytes.delete(h.owner);
    } else {
      this.#heldBytes.set(h.owner, left);
    }
  }
}
