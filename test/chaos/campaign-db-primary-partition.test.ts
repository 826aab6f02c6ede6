// The fault campaign's db-primary-partition cell under ADMIT_DURABILITY=memory (test/support/chaos-cell.ts):
// the PostgreSQL leader under Patroni cut from its peers and from etcd mid-sale, then healed; every
// acknowledged order stored, whichever member leads after the heal.
import { campaignCell } from '../support/chaos-cell.js';

campaignCell('db-primary-partition', 'memory');
