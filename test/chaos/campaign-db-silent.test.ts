// The fault campaign's db-silent cell under ADMIT_DURABILITY=memory (test/support/chaos-cell.ts).
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('db-silent', 'memory');
