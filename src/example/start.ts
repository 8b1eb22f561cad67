import { runServe } from '../cli/serve.js';
import { validateConfig } from '../config/load.js';
import { startEchoUpstream } from './echo-upstream.js';

/**
 * `npm start`: the echo backend on the config's upstream address (127.0.0.1:3000), then
 * `leadgate serve` on config/gateway.yaml with the example keys (config/.env.example; real
 * environment variables win). Ports move by the same variables as `leadgate serve`:
 * LEADGATE_LISTEN_PORT, LEADGATE_ADMIN_PORT, and LEADGATE_UPSTREAM_URL for the echo backend.
 */
try {
  process.loadEnvFile(new URL('../../../config/.env.example', import.meta.url));
} catch {
  // no example env file: the config names what is missing
}
const configPath = process.env.LEADGATE_CONFIG ?? 'config/gateway.yaml';
const port = echoPort(configPath);
const echo = port === null ? null : await startEchoUpstream(port).catch(cannotListen);
if (echo !== null) process.stderr.write(`example echo upstream on http://127.0.0.1:${echo.port}\n`);
const code = await runServe(['--config', configPath]);
if (code !== 0) {
  echo?.close();
  process.exitCode = code;
} else {
  echo?.unref();
}

/** The port of a loopback http upstream in the config; null when the config has problems (serve says which). */
function echoPort(path: string): number | null {
  try {
    const url = new URL(validateConfig(path).raw.upstream.url);
    const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
    return loopback && url.protocol === 'http:' ? Number(url.port || 80) : null;
  } catch {
    return null;
  }
}

/** One line and exit 1, never a stack trace: the port is taken (or not ours to take). */
function cannotListen(err: NodeJS.ErrnoException): never {
  const why = err.code === 'EADDRINUSE' ? 'the address is in use' : (err.code ?? err.message);
  process.stderr.write(
    `npm start: the example echo backend cannot listen on 127.0.0.1:${port}: ${why}; ` +
      `stop what uses it, or move the backend: LEADGATE_UPSTREAM_URL=http://127.0.0.1:3100 npm start\n`,
  );
  process.exit(1);
}
