// The fault campaign's db-primary-kill cell under ADMIT_DURABILITY=memory (test/support/chaos-cell.ts):
// the database fails over to a standby 2 s behind, and every acknowledged order is stored all the same.
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('db-primary-kill', 'memory');
