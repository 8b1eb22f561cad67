import { writeFileSync } from 'node:fs';
import { configJsonSchemaText } from '../src/config/json-schema.js';

/** `npm run schema`: writes config/leadgate.schema.json from the loader's schema. */
const target = new URL('../../config/leadgate.schema.json', import.meta.url);
writeFileSync(target, configJsonSchemaText());
process.stdout.write(`wrote ${target.pathname}\n`);
