/**
 * CONTRACT §5: a lead id is 1–128 visible ASCII characters without spaces. It travels to the
 * upstream as the value of `x-lead-id`, so anything else (CR/LF, NUL, DEL, non-ASCII, blanks) is
 * refused wherever a lead id enters: a token's `lead_id`, a leads file, the lead backend's answer.
 */
const LEAD_ID = /^[\x21-\x7e]{1,128}$/;

export function isValidLeadId(value: unknown): value is string {
  return typeof value === 'string' && LEAD_ID.test(value);
}

export const LEAD_ID_RULE = 'a lead id is 1-128 visible ASCII characters without spaces';
