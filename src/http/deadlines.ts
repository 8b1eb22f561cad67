/** Something that has a deadline: called once when it passes, unless it was removed first. */
export interface Expiring {
  expire(): void;
}

/** One entry of a {@link Deadlines} list: what to tell and when. */
export interface Deadline {
  prev: Deadline | null;
  next: Deadline | null;
  readonly at: number;
  item: Expiring | null;
}

/**
 * Deadlines of one length (the upstream's `timeout_ms`), for every request in flight. Entries are
 * added in the order their deadlines fall, so the list is a queue: adding appends, removing
 * unlinks, and one timer is armed for the first deadline only. Per request that is an entry and
 * two links, where a timer each cost a `Timeout` object and its insertion in Node's timer lists
 * (~0.35 µs measured, for a deadline that almost never passes). Deadlines fire in order and on
 * time: the timer wakes at the first one, expires every entry that is due, and is armed again for
 * the next; with nothing waiting, no timer is left.
 */
export class Deadlines {
  private head: Deadline | null = null;
  private tail: Deadline | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (ms, `now()`'s clock). */
  private timerAt = 0;

  constructor(
    private readonly ms: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `item` expires in `ms` unless removed before. */
  add(item: Expiring): Deadline {
    const entry: Deadline = { prev: this.tail, next: null, at: this.now() + this.ms, item };
    if (this.tail === null) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    if (this.timer === null) this.arm(entry.at);
    return entry;
  }

  /** The entry no longer expires (its request was answered). Removing twice does nothing. */
  remove(entry: Deadline): void {
    if (entry.item === null) return;
    entry.item = null;
    this.unlink(entry);
    if (this.head === null && this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** Entries waiting; for tests and metrics. */
  get size(): number {
    let n = 0;
    for (let e = this.head; e !== null; e = e.next) n++;
    return n;
  }

  private unlink(entry: Deadline): void {
    if (entry.prev === null) this.head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === null) this.tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = null;
    entry.next = null;
  }

  private arm(at: number): void {
    this.timerAt = at;
    this.timer = setTimeout(fire, Math.max(1, Math.ceil(at - this.now())), this);
  }

  /** The timer fired: every entry that is due expires, in order; then the next one is waited for. */
  onTimer(): void {
    this.timer = null;
    const now = Math.max(this.now(), this.timerAt);
    for (let e = this.head; e !== null && e.at <= now; e = this.head) {
      const item = e.item;
      e.item = null;
      this.unlink(e);
      item?.expire();
    }
    if (this.head !== null && this.timer === null) this.arm(this.head.at);
  }
}

function fire(list: Deadlines): void {
  list.onTimer();
}
