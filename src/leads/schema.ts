import { z } from 'zod';
import { isValidLeadId, LEAD_ID_RULE } from '../contract/lead-id.js';

const positive = z.number().int().positive();
const nonNegative = z.number().int().min(0);

/** `leads:` — where the lookup finds leads: a file (the embedded default) or the backend. */
export const leadsSchema = z
  .strictObject({
    file: z.string().min(1).optional(),
    upstream: z
      .strictObject({
        path: z
          .string()
          .startsWith('/')
          .refine((p) => p.includes('{customer_id}'), { message: 'must contain {customer_id}' }),
        by_id_path: z
          .string()
          .startsWith('/')
          .refine((p) => p.includes('{id}'), { message: 'must contain {id}' })
          .optional(),
        cache_ttl_s: nonNegative.default(60),
        cache_size: positive.default(10_000),
      })
      .optional(),
  })
  .refine((l) => !(l.file && l.upstream), { message: 'give leads.file or leads.upstream, not both' })
  .default({});

/** A leads file: its records, each with a lead id the contract allows. */
export const leadsFileSchema = z.strictObject({
  leads: z.array(
    z.looseObject({
      _id: z.string().refine(isValidLeadId, { message: LEAD_ID_RULE }),
      customer_id: z.string().min(1),
    }),
  ),
});

/** What each `leads:` field means, for `leadgate docs` and docs/reference/config.md. */
export const leadsMeanings: Readonly<Record<string, string>> = {
  'leads.file':
    'YAML file of lead records (`_id`, `customer_id`, …) the lookup answers from. Without a `leads:` section, `leads.yaml` beside the config when there is one (`leadgate check` says which), else no leads',
  'leads.upstream.path':
    'ask the backend instead: e.g. `/internal/leads?customer_id={customer_id}` (see lead-resolver.md)',
  'leads.upstream.by_id_path': 'e.g. `/internal/leads/{id}`, for lookups by token or `:id`',
  'leads.upstream.cache_ttl_s': "how long the backend's answers (found and not found) are kept",
  'leads.upstream.cache_size': 'answers kept (LRU)',
};
