import { execFileSync } from 'node:child_process';

/** True when python3 runs here: the tests that check against Python's hmac need it. */
export const hasPython = (() => {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
