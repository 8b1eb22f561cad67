/**
 * `leadgate/client`: the merchant-side helpers, re-exported from the zero-dependency package
 * `@leadgate/client` (packages/client) that this repository also publishes on its own.
 */
export * from '../../packages/client/src/index.js';
