// What every feature receives: one server, a Sentinel-managed master, or a cluster, with the same
// commands (client.ts makes it). The few places that must know which ask isCluster.
import type { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

export const isCluster = (redis: RedisClient): redis is Cluster => (redis as Cluster).isCluster === true;
