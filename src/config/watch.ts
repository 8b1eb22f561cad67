import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface ConfigWatcher {
  /** Watch this set of files from now on (a reload may name new ones). */
  update(files: readonly string[]): void;
  close(): void;
}

/**
 * Calls `onChange` when any of the files changes. Two triggers, both cheap:
 * - inotify on each file's folder: catches writes, renames and Kubernetes' atomic `..data`
 *   symlink swap at once (debounced);
 * - a stat poll every `pollMs`, following symlinks: catches what an event missed (a folder that
 *   vanished and came back, network filesystems).
 * Nothing here throws: a missing file or folder is just "not there yet".
 */
export function createConfigWatcher(
  files: readonly string[],
  onChange: () => void,
  options: { debounceMs?: number; pollMs?: number } = {},
): ConfigWatcher {
  const debounceMs = options.debounceMs ?? 100;
  let watchers: FSWatcher[] = [];
  let current: readonly string[] = [];
  let fingerprints = new Map<string, string>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const fingerprint = (file: string): string => {
    try {
      const st = statSync(file);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'missing';
    }
  };
  const fire = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      if (!closed) onChange();
    }, debounceMs);
  };
  const arm = () => {
    for (const w of watchers) w.close();
    watchers = [];
    const names = new Map<string, Set<string>>();
    for (const f of current) {
      const dir = dirname(f);
      if (!names.has(dir)) names.set(dir, new Set());
      names.get(dir)?.add(basename(f));
    }
    for (const [dir, wanted] of names) {
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          // `..data` is Kubernetes' swap; any other name counts only if it is one of ours.
          if (name === null || name.startsWith('..') || wanted.has(name.toString())) fire();
        });
        w.on('error', () => w.close());
        watchers.push(w);
      } catch {
        // the folder is not there (yet): the poll below will notice it appear
      }
    }
  };
  const poll = setInterval(() => {
    let changed = false;
    for (const f of current) {
      const fp = fingerprint(f);
      if (fingerprints.get(f) !== fp) changed = true;
      fingerprints.set(f, fp);
    }
    if (changed) {
      arm();
      fire();
    }
  }, options.pollMs ?? 1000);
  poll.unref();

  const watcher: ConfigWatcher = {
    update(next) {
      current = [...next];
      fingerprints = new Map(current.map((f) => [f, fingerprint(f)]));
      arm();
    },
    close() {
      closed = true;
      clearInterval(poll);
      if (timer) clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
  watcher.update(files);
  return watcher;
}
