#!/usr/bin/env node
// The `leadgate` binary. Committed with its mode (0755): `npx leadgate` works after any `npm ci`,
// whatever mode the build leaves on dist/. The compiled CLI is loaded from dist/ (`npm ci` and
// `npm run build` write it).
import { runCli } from '../dist/src/main.js';

runCli(process.argv.slice(2));
