// The workflow bundle's entry point: every workflow type the worker registers.
export { auditWorkflow } from './audit.js';
export { exportWindowWorkflow } from './export-window.js';
export { fleetBudgetWorkflow } from './fleet-budget.js';
export { syncRunWorkflow } from './sync-run.js';
export { threadsWorkflow } from './threads.js';
export { ticketsWorkflow } from './tickets.js';
