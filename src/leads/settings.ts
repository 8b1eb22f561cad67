/** A lead record, as the lookup answers it. */
export interface Lead {
  readonly _id: string;
  readonly customer_id: string;
  readonly [field: string]: unknown;
}

export type LeadsConfig =
  | { readonly kind: 'file'; readonly file: string | null; readonly records: readonly Lead[] }
  | {
      readonly kind: 'upstream';
      readonly path: string;
      readonly byIdPath: string | null;
      readonly cacheTtlMs: number;
      readonly cacheSize: number;
    };
