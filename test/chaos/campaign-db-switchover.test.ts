// The fault campaign's db-switchover cell under ADMIT_DURABILITY=memory on PostgreSQL under Patroni
// (test/support/chaos-cell.ts): a planned switchover mid-sale, every acknowledged order stored.
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('db-switchover', 'memory', { database: 'patroni' });
