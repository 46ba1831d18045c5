import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers log every state change at INFO; tests only want warnings. Must run before any runtime exists.
Runtime.install({ logger: new DefaultLogger('WARN') });
