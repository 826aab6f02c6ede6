// One disagreement reconciliation found between the stores, and whether it was repaired.
export type DriftKind =
  | 'state_missing'
  | 'stock'
  | 'inflight_counter'
  | 'buyer'
  | 'lost_entry'
  | 'lost_inflight_record'
  | 'unsettled_order'
  | 'overdue_orders'
  | 'stuck_outbox'
  | 'consumer_group_missing'
  | 'unfinished_move';

export interface Drift {
  kind: DriftKind;
  detail: string;
  repaired: boolean;
}
