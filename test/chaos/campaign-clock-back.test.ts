// The fault campaign's clock-back cell under ADMIT_DURABILITY=memory (test/support/chaos-cell.ts).
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('clock-back', 'memory');
