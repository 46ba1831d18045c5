import { claimForkTemporalServer } from './temporal.js';

// Before the test file's own code: its fork's Temporal dev server (test/support/temporal.ts).
await claimForkTemporalServer();
