export { generateWorld, HISTORY_DAYS } from './generate.js';
export { Prng } from './prng.js';
export { messageText } from './text.js';
export * from './types.js';
export {
  compareSessions,
  compareSurveySent,
  compareTickets,
  isReopen,
  type NewMessageInput,
  type NewTicketInput,
  type TicketChange,
  World,
  type WorldData,
  type WorldSettings,
} from './world.js';
