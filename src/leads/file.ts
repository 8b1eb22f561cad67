import type { LeadResolver } from './resolver.js';
import type { Lead } from './settings.js';

/** The embedded default: lead records from the leads file, indexed once when the config loads. */
export function createFileResolver(records: readonly Lead[]): LeadResolver {
  const byCustomer = new Map<string, Lead>();
  const byId = new Map<string, Lead>();
  for (const lead of records) {
    byCustomer.set(lead.customer_id, lead);
    byId.set(lead._id, lead);
  }
  return {
    byCustomerId: async (customerId) => byCustomer.get(customerId) ?? null,
    byId: async (id) => byId.get(id) ?? null,
    close() {},
  };
}
