/** A timer that never holds the process open on its own. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Polls `done` every 25 ms; true when it held within `ms`, false on timeout. */
export async function waitUntil(done: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() >= until) return false;
    await sleep(25);
  }
  return true;
}
