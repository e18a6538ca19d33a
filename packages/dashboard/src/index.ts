/**
 * `@rowclaim/dashboard`: a web page over rowclaim queue tables, as a Web-standard
 * `Request → Response` handler. See {@link createDashboard}; adapters for `node:http`
 * (`@rowclaim/dashboard/node`), Express (`/express`) and Fastify (`/fastify`).
 *
 * @packageDocumentation
 */
export type { BasicUser, DashboardAuth, DashboardRole, DashboardUser } from "./auth.js";
export { CSRF_FIELD } from "./csrf.js";
export { createDashboard, type Dashboard, MAX_FORM_BYTES, MAX_SELECTED_IDS } from "./dashboard.js";
export { ROW_ACTIONS, type RowAction } from "./model.js";
export type { DashboardOptions, PayloadDisplay, RedactionContext } from "./options.js";
export { CONTENT_SECURITY_POLICY } from "./responses.js";
