/**
 * SIGHUP while `serve` starts. Until a handler is installed, SIGHUP's default action ends the
 * process, and a 100,000-key config takes over a second to load: a config-reloader sidecar or an
 * operator signalling then would kill the gateway without a word. Held from the moment the command
 * is known; the gateway, once running, reloads for one that came meanwhile.
 */
export interface HeldHangups {
  /** Stops holding; `onHeld` runs once if a SIGHUP came while held. */
  release(onHeld?: () => void): void;
}

export function holdHangups(): HeldHangups {
  let held = false;
  const hold = () => {
    held = true;
  };
  process.on('SIGHUP', hold);
  return {
    release(onHeld) {
      process.off('SIGHUP', hold);
      if (held) onHeld?.();
    },
  };
}
