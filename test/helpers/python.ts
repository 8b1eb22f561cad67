import { runs } from './optional.js';

/** True when python3 runs here: the tests that check against Python's hmac need it. */
export const hasPython = runs('python3', ['--version']);
