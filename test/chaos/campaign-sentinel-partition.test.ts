// The fault campaign's sentinel-partition cell under ADMIT_DURABILITY=replica (test/support/chaos-cell.ts).
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('sentinel-partition', 'replica');
