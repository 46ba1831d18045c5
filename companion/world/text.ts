import type { MessageRecord } from './types.js';

const CUSTOMER = [
  'Hi, my order has not arrived yet. Can you check where it is?',
  'I was charged twice for the same subscription this month.',
  'The app crashes when I try to upload a photo.',
  'How do I change the email address on my account?',
  'Can I return an item after 30 days?',
  'Your widget says the store is closed but the website says open.',
  'I need an invoice with my company VAT number, please.',
  'The discount code does not work at checkout.',
];
const AGENT = [
  'Thanks for reaching out! I have checked your order and it is on its way.',
  'Sorry about that. I have refunded the duplicate charge; it shows in 3-5 days.',
  'Could you tell me which version of the app you are using?',
  'You can change it under Settings > Account. Let me know if that helps.',
  'I have forwarded this to our billing team, they will get back to you today.',
  'All done, the invoice is attached to this message.',
];
const AI = [
  'Hello! I am the virtual assistant. Here is an article that may help: returns are accepted within 60 days.',
  'I found your order. It was shipped yesterday and should arrive within 2 business days.',
  'I can help with that. To reset your password, use the "Forgot password" link on the login page.',
];
const NOTE = [
  'Customer is a VIP, handle with care.',
  'Checked Stripe: double charge confirmed.',
  'Escalated to tier 2.',
];

/**
 * Text of a generated message, derived from its seed so that 100k threads cost no string memory until read.
 * About one generated message in 4,000 is longer than 10,000 characters, so the read cut (spec 2.3) is
 * exercised by real data.
 */
export function messageText(m: MessageRecord): string {
  if (m.text !== null) return m.text;
  const s = m.textSeed;
  const pool =
    m.visibility === 'internal_note' ? NOTE : m.role === 'customer' ? CUSTOMER : m.role === 'ai' ? AI : AGENT;
  const base = pool[s % pool.length] ?? '';
  if (s % 4001 === 17) return `${base}\n\n${'Log line: request failed with status 500. '.repeat(300)}`;
  return base;
}

const SUBJECTS = [
  'Where is my order?',
  'Double charge on my card',
  'App crashes on upload',
  'Change account email',
  'Return request',
  'Opening hours',
  'Invoice with VAT number',
  'Discount code not working',
];

export function subjectFor(seed: number): string {
  return SUBJECTS[seed % SUBJECTS.length] ?? 'Question';
}
