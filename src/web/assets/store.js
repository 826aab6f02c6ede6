// An example buyer's page: the sale's phase and countdown, live units left, a buy button and the
// order's way from `processing` to `pending_payment` to `paid`, pushed over the buyer's event
// stream (GET /api/orders/events; a slow poll behind it, since the stream is at most once); the
// waitlist position when sold out. A queue voucher shows "Join the queue" instead of Buy: the
// pre-queue before the start, then the place, how many wait ahead and the wait, and the order
// once the place is admitted (queue events on the same stream, and a poll). One Idempotency-Key per purchase: every click until that order is settled sends the same
// key, so a double click (or a retry after a timeout) is one order. An admitted order that the
// service lost before storing it (Redis lost its data) is said to be lost, and may be claimed again.
import { createApi } from './lib/api.js';
import { byId } from './lib/dom.js';
import { isId } from './lib/ids.js';
import { signInMessage, tokenStore, wireSignIn } from './lib/session.js';
import { openEvents } from './lib/sse.js';
import { countdown, phaseOf } from './lib/time.js';

const HINT = 'Paste a valid user token (`seckill token --user <id>`).';
const FINAL = new Set(['paid', 'cancelled', 'expired', 'failed', 'refunded']);
/** PAYMENT_MODE=external (the server names it in the page): the shop's checkout takes payments, not this page. */
const SHOP_PAYS = document.querySelector('meta[name="payment-mode"]')?.getAttribute('content') === 'external';
const voucherId = location.pathname.split('/').pop() ?? '';
const session = tokenStore('seckill.store.token');
const api = createApi(session.get, (err) => signOut(signInMessage(err, HINT)));

/** @type {any} */
let voucher = null;
/** The key of the purchase in progress; a new one once its order is settled or refused. */
let purchaseKey = /** @type {string | null} */ (null);
/** @type {any} */
let order = null;
let orderTimer = /** @type {ReturnType<typeof setTimeout> | undefined} */ (undefined);
/** Stops the buyer's event stream. */
let stopEvents = () => {};
let waitTimer = /** @type {ReturnType<typeof setTimeout> | undefined} */ (undefined);
let queueTimer = /** @type {ReturnType<typeof setTimeout> | undefined} */ (undefined);
let busyTimer = /** @type {ReturnType<typeof setTimeout> | undefined} */ (undefined);
/** Automatic retries of the purchase in progress after a 503; a click starts the count again. */
let busyRetries = 0;
const MAX_BUSY_RETRIES = 5;

const STANDING = {
  prequeue: 'You are in the queue. Places are drawn at random when the sale starts: joining early or late makes no difference.',
  waiting: 'You are waiting for your turn.',
  admitted: 'Your turn: a unit is reserved for you.',
  closed: 'The queue is closed: no unit is left for your place.',
};

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function signOut(/** @type {string} */ message = '') {
  stopEvents();
  session.clear();
  byId('buyer').hidden = true;
  byId('sign-out').hidden = true;
  byId('sign-in').hidden = false;
  byId('sign-in-message').textContent = message;
}

function signedIn() {
  byId('sign-in').hidden = true;
  byId('buyer').hidden = false;
  byId('sign-out').hidden = false;
  byId('sign-in-message').textContent = '';
}

/** A price in minor units as the currency writes it ("$19.99", "¥500"). @param {number} minor @param {string} currency */
function money(minor, currency) {
  if (minor === 0) return 'free';
  const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
  return format.format(minor / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}

async function refreshVoucher() {
  try {
    voucher = await api.get(`/api/vouchers/${voucherId}`);
    byId('title').textContent = voucher.title;
    document.title = voucher.title;
    byId('units').textContent = String(voucher.available);
    byId('price').textContent = money(voucher.price, voucher.currency);
    byId('sale-message').textContent = '';
    byId('queue').hidden = !voucher.queue;
    byId('buy').hidden = Boolean(voucher.queue);
  } catch (err) {
    byId('sale-message').textContent = /** @type {any} */ (err).code === 'VOUCHER_NOT_FOUND' ? 'There is no such sale.' : `Cannot load the sale: ${/** @type {any} */ (err).message}`;
  }
}

function renderPhase() {
  if (!voucher) return;
  const { phase, msLeft } = phaseOf(voucher);
  byId('phase').textContent = phase === 'upcoming' ? 'starts soon' : phase === 'open' ? 'on sale' : 'ended';
  byId('countdown').textContent = phase === 'upcoming' ? `starts in ${countdown(msLeft)}` : phase === 'open' ? `ends in ${countdown(msLeft)}` : '';
}

function showOrder(/** @type {any} */ o) {
  order = o;
  byId('order-id').textContent = o.id ?? o.orderId;
  byId('order-status').textContent = o.status;
  const payable = o.status === 'pending_payment';
  // The buyer confirms only a simulated payment; otherwise the shop's checkout takes it.
  byId('pay').hidden = !payable || SHOP_PAYS;
  byId('checkout-note').hidden = !payable || !SHOP_PAYS;
  if (payable && o.expiresAt) byId('pay-before').textContent = new Date(o.expiresAt).toLocaleTimeString();
  // Admitted, not stored yet: another click could only answer the same order.
  /** @type {HTMLButtonElement} */ (byId('buy')).disabled = o.status === 'processing';
  if (FINAL.has(o.status)) purchaseKey = null;
}

/** The order was admitted, then lost before it was stored: no unit is held, nothing was paid. */
function showLost() {
  order = null;
  purchaseKey = null; // the admission and its key are gone: the next click is a new claim
  byId('order-id').textContent = 'none';
  byId('order-status').textContent = 'not kept';
  byId('pay').hidden = true;
  byId('checkout-note').hidden = true;
  /** @type {HTMLButtonElement} */ (byId('buy')).disabled = false;
  byId('buy-message').textContent = 'Your claim was not kept: the service lost it before storing it, and nothing was charged. Press Buy to claim again.';
}

async function followOrder(/** @type {string} */ id) {
  clearTimeout(orderTimer);
  try {
    showOrder(await api.get(`/api/orders/${id}`));
  } catch (err) {
    const e = /** @type {any} */ (err);
    // Not found while it was processing: neither the admission nor a stored order exists any more.
    if (e.code === 'ORDER_NOT_FOUND' && order?.status === 'processing' && (order.id ?? order.orderId) === id) return showLost();
    byId('buy-message').textContent = `Cannot read the order: ${e.message}`;
  }
  // The stream pushes each change; this slow look only covers an event the stream missed.
  if (order && !FINAL.has(order.status)) orderTimer = setTimeout(() => followOrder(id), 3000);
}

/** A buyer's standing in the queue (queue/me, the join's answer or a queue event). @param {any} s */
function showStanding(s) {
  byId('join').hidden = true;
  byId('queue-message').textContent = STANDING[/** @type {keyof typeof STANDING} */ (s.state)] ?? s.state;
  byId('queue-place').hidden = s.position === null || s.state === 'admitted';
  byId('queue-position').textContent = String(s.position ?? '');
  byId('queue-ahead').textContent = String(s.ahead ?? '');
  byId('queue-eta').textContent = s.etaSeconds === null ? 'not known yet' : `about ${countdown(s.etaSeconds * 1000)}`;
  if (s.state === 'admitted' && s.orderId && (order?.id ?? order?.orderId) !== s.orderId) {
    showOrder({ id: s.orderId, status: 'processing' });
    void followOrder(s.orderId);
  }
}

/** Polls the standing while it can change (the stream says when it does; ahead and the wait move on without events). */
async function followQueue() {
  clearTimeout(queueTimer);
  try {
    const s = await api.get(`/api/vouchers/${voucherId}/queue/me`);
    showStanding(s);
    if (s.state === 'prequeue' || s.state === 'waiting') queueTimer = setTimeout(followQueue, 2000);
  } catch (err) {
    if (/** @type {any} */ (err).status === 404) {
      // Shown in the queue before: the service lost the join (made just before it lost its data).
      if (byId('join').hidden) byId('queue-message').textContent = 'Your place in the queue was lost: the service lost its most recent joins. Join again.';
      byId('queue-place').hidden = true;
      byId('join').hidden = false;
    }
  }
}

async function joinQueue() {
  const message = byId('queue-message');
  try {
    showStanding(await api.post(`/api/vouchers/${voucherId}/queue`));
    void followQueue();
  } catch (err) {
    const e = /** @type {any} */ (err);
    if (e.code === 'NOT_STARTED') message.textContent = `The queue opens at ${new Date(voucher.queue.opensAt).toLocaleString()}.`;
    else if (e.code === 'ENDED') message.textContent = 'The sale has ended.';
    else if (e.code === 'SOLD_OUT') message.textContent = 'Sold out: the queue is closed.';
    else message.textContent = `Not joined: ${e.message}`;
  }
}

/** The buyer's order events: this sale's order moves on; a promotion from the waitlist appears. */
function listen(/** @type {string} */ token) {
  stopEvents();
  stopEvents = openEvents('/api/orders/events', token, {
    onEvent(type, event) {
      if (event.voucherId !== voucherId) return;
      if (type === 'queue') return showStanding(event);
      const current = order && (order.id ?? order.orderId);
      if (type === 'promoted' || event.orderId === current) {
        byId('waitlist').hidden = true;
        showOrder({ id: event.orderId, status: event.status });
        void followOrder(event.orderId); // the whole order (its payment deadline), and the safety poll
      }
    },
    onError() {}, // reconnects by itself; the safety poll keeps the page right meanwhile
  });
}

async function buy(/** @type {boolean} */ retry = false) {
  clearTimeout(busyTimer);
  if (!retry) busyRetries = 0;
  purchaseKey ??= newKey();
  const key = purchaseKey;
  const message = byId('buy-message');
  message.textContent = 'Sending…';
  try {
    const claimed = await api.post(`/api/vouchers/${voucherId}/orders`, { quantity: 1 }, { 'idempotency-key': key });
    message.textContent = 'Got it!';
    byId('waitlist').hidden = true;
    if (!order || (order.id ?? order.orderId) !== claimed.orderId) showOrder({ id: claimed.orderId, status: claimed.status });
    void followOrder(claimed.orderId);
  } catch (err) {
    const e = /** @type {any} */ (err);
    // A 503 may have been answered to an admission that stood (a replica did not confirm it in
    // time): the same key again returns that order, or claims if there is none.
    if (e.status === 503 && busyRetries < MAX_BUSY_RETRIES) {
      busyRetries += 1;
      const seconds = Math.max(1, e.retryAfter ?? 1);
      message.textContent = `The service is busy: trying again in ${seconds} s, as the same purchase.`;
      busyTimer = setTimeout(() => void buy(true), seconds * 1000);
      return;
    }
    if (e.code !== 'NETWORK' && e.status !== 503) purchaseKey = null; // refused: the next click is a new purchase
    if (e.code === 'SOLD_OUT' && e.body.waitlisted) {
      message.textContent = 'Sold out: you are on the waitlist.';
      void followWaitlist();
    } else if (e.code === 'SOLD_OUT') message.textContent = 'Sold out.';
    else if (e.code === 'NOT_STARTED') message.textContent = 'The sale has not started yet.';
    else if (e.code === 'ENDED') message.textContent = 'The sale has ended.';
    else if (e.code === 'LIMIT_EXCEEDED') message.textContent = 'You already have the most units allowed.';
    else message.textContent = `Not bought: ${e.message}`;
  }
}

async function followWaitlist() {
  clearTimeout(waitTimer);
  try {
    const { position } = await api.get(`/api/vouchers/${voucherId}/waitlist/me`);
    byId('waitlist').hidden = false;
    byId('waitlist-position').textContent = String(position);
    waitTimer = setTimeout(followWaitlist, 2000);
  } catch (err) {
    if (/** @type {any} */ (err).status !== 404) return;
    // Off the waitlist: promoted to an order, or the sale ended.
    byId('waitlist').hidden = true;
    const { orders } = await api.get(`/api/orders?voucherId=${voucherId}&limit=1`);
    if (orders[0]) void followOrder(orders[0].id);
  }
}

async function pay() {
  if (!order) return;
  try {
    showOrder(await api.post(`/api/orders/${order.id ?? order.orderId}/pay`));
    byId('buy-message').textContent = order.status === 'paid' ? 'Paid. Thank you!' : '';
  } catch (err) {
    byId('buy-message').textContent = `Payment failed: ${/** @type {any} */ (err).message}`;
  }
}

async function signIn(/** @type {string} */ token) {
  session.set(token);
  try {
    // Any user route checks the token; the list also finds an order of this sale from before a reload.
    const { orders } = await api.get(`/api/orders?voucherId=${voucherId}&limit=1`);
    signedIn();
    listen(token);
    if (orders[0] && !FINAL.has(orders[0].status)) void followOrder(orders[0].id);
    if (voucher?.queue) void followQueue();
  } catch (err) {
    if (/** @type {any} */ (err).status !== 401) signOut(signInMessage(/** @type {any} */ (err), HINT));
  }
}

if (isId(voucherId)) {
  wireSignIn(signIn, () => signOut());
  byId('buy').addEventListener('click', () => void buy());
  byId('pay').addEventListener('click', () => void pay());
  byId('join').addEventListener('click', () => void joinQueue());

  await refreshVoucher();
  renderPhase();
  setInterval(renderPhase, 250);
  setInterval(refreshVoucher, 1000);
  const saved = session.get();
  if (saved) void signIn(saved);
  else signOut();
} else {
  // Never sent in a request path: it could name another route.
  byId('sale-message').textContent = 'This address names no sale: its last part is not a voucher id.';
}
