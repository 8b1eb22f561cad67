import { runServe } from '../cli/serve.js';
import { startEchoUpstream } from './echo-upstream.js';

/**
 * `npm start`: the echo backend on 127.0.0.1:3000, then `leadgate serve` on config/gateway.yaml
 * with the example keys (config/.env.example; real environment variables win).
 */
try {
  process.loadEnvFile(new URL('../../../config/.env.example', import.meta.url));
} catch {
  // no example env file: the config names what is missing
}
const echo = await startEchoUpstream(Number(process.env.ECHO_PORT ?? 3000));
process.stderr.write(`example echo upstream on http://127.0.0.1:${echo.port}\n`);
const code = await runServe(['--config', process.env.LEADGATE_CONFIG ?? 'config/gateway.yaml']);
if (code !== 0) {
  echo.close();
  process.exitCode = code;
} else {
  echo.unref();
}
