// The fault campaign's db-silent cell under ADMIT_DURABILITY=memory (test/support/chaos-cell.ts),
// the database silent for 8 s instead of the campaign's 20: past DB_STATEMENT_TIMEOUT_MS all the same.
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('db-silent', 'memory', { holdMs: 8_000 });
