// Generated from the OpenAPI document by `node --import tsx scripts/client-schema.ts > src/client/schema.ts`: do not edit.
export interface paths {
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The OpenAPI UI */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the OpenAPI UI (HTML) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/html": string;
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This OpenAPI document (JSON) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the OpenAPI 3 document */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/yaml": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This OpenAPI document (YAML) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the OpenAPI 3 document */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/x-yaml": string;
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: 200 while the process runs */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            status: "ok";
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: 200 while Redis and the database answer within 800 ms (degraded: one is slow, Redis lost its data or the database failed over in the last minute) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description each store's state and latency */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {unknown} */
                            status: "ready" | "degraded" | "unavailable";
                            redis: {
                                /** @enum {unknown} */
                                state: "ok" | "degraded" | "down";
                                latencyMs: number | null;
                                /** @description when this process first saw it down */
                                downSince?: string;
                                /** @description the last time this process saw Redis lose its data */
                                dataLostAt?: string;
                                dataLosses: number;
                            };
                            database: {
                                /** @enum {unknown} */
                                state: "ok" | "degraded" | "down";
                                latencyMs: number | null;
                                /** @description when this process first saw it down */
                                downSince?: string;
                                /** @description when another database server than the one before began answering (a failover); degraded for a minute after */
                                serverChangedAt?: string;
                            };
                        };
                    };
                };
                /** @description UNAVAILABLE: a store is down (the body also has the report of a 200: status, redis, database) or the server is shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (text exposition format) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the metrics of this process (or the sum over the API processes of a supervisor) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/plain": string;
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List vouchers, newest first, with their live availability (admin)
         * @description Unknown query parameters are rejected.
         */
        get: {
            parameters: {
                query?: {
                    /** @description most vouchers returned, an integer 1..200 (default 50) */
                    limit?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            vouchers: {
                                id: string;
                                title: string;
                                kind: string;
                                stock: number;
                                available: number;
                                beginAt: string;
                                endAt: string;
                                perUserLimit: number;
                                paymentTimeoutSeconds: number;
                                waitlist: boolean;
                                claimToken: boolean;
                                segments: number;
                                queue: {
                                    opensAt: string;
                                } | null;
                                price: number;
                                currency: string;
                            }[];
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create a voucher (admin); seckill vouchers are warmed into Redis */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * Format: text
                         * @description no NUL, no control characters but tab and line breaks, no unpaired surrogates
                         */
                        title: string;
                        kind: "seckill" | "limited" | "common";
                        stock: number;
                        /**
                         * Format: date-time
                         * @description ISO-8601 date-time from 1000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z
                         */
                        beginAt: string;
                        /**
                         * Format: date-time
                         * @description ISO-8601 date-time from 1000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z
                         */
                        endAt: string;
                        perUserLimit?: number;
                        paymentTimeoutSeconds?: number;
                        waitlist?: boolean;
                        claimToken?: boolean;
                        segments?: number;
                        queue?: {
                            /**
                             * Format: date-time
                             * @description ISO-8601 date-time from 1000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z
                             */
                            opensAt: string;
                        };
                        /** @description minor units of currency (cents), default 0 */
                        price?: number;
                        /** @description ISO 4217, three capital letters; default DEFAULT_CURRENCY */
                        currency?: string;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            title: string;
                            kind: string;
                            stock: number;
                            available: number;
                            beginAt: string;
                            endAt: string;
                            perUserLimit: number;
                            paymentTimeoutSeconds: number;
                            waitlist: boolean;
                            claimToken: boolean;
                            segments: number;
                            queue: {
                                opensAt: string;
                            } | null;
                            price: number;
                            currency: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a voucher with its live availability */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            title: string;
                            kind: string;
                            stock: number;
                            available: number;
                            beginAt: string;
                            endAt: string;
                            perUserLimit: number;
                            paymentTimeoutSeconds: number;
                            waitlist: boolean;
                            claimToken: boolean;
                            segments: number;
                            queue: {
                                opensAt: string;
                            } | null;
                            price: number;
                            currency: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Claim units of a voucher
         * @description seckill: 202 {orderId, status:"processing"}; the order is stored asynchronously. limited/common: 201 {orderId, status:"pending_payment"}; the order is stored before the answer. Repeating a request with the same Idempotency-Key returns the same order and takes no second unit. A voucher created with claimToken: true needs header Claim-Token (GET /api/vouchers/:id/claim-token).
         */
        post: {
            parameters: {
                query?: never;
                header?: {
                    "idempotency-key"?: string;
                    "claim-token"?: string;
                };
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        quantity?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            orderId: string;
                            status: string;
                        };
                    };
                };
                /** @description Default Response */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            orderId: string;
                            status: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description CLAIM_TOKEN_REQUIRED · CLAIM_TOKEN_EXPIRED · CLAIM_TOKEN_INVALID: the voucher takes claims with a valid Claim-Token of yours only */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description NOT_STARTED · ENDED: outside the sale window; SOLD_OUT (the body also has `waitlisted`: true when you are on the waitlist); LIMIT_EXCEEDED: you would hold more than perUserLimit units; CLAIM_IN_PROGRESS (limited): another claim of yours holds the lock, retry; QUEUE_REQUIRED: a queue voucher is sold through its queue (POST /api/vouchers/:id/queue) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used with another quantity */
                422: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: a token bucket (the voucher's, or yours for this voucher) or the per-address limit is empty; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable, the server overloaded or shutting down, or the replicas did not confirm (the admission may stand: retry with the same Idempotency-Key); LOCK_LOST (limited): nothing was taken, retry; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/claim-token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A short-lived token for claiming a voucher created with claimToken: true (send it as header Claim-Token) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            token: string;
                            expiresAt: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id; CLAIM_TOKEN_NOT_OFFERED: the voucher takes claims without a claim token */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description NOT_STARTED · ENDED: outside the sale window */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List your orders, newest first
         * @description Your stored orders, newest first (createdAt, then id, descending), optionally of one voucher. An admitted seckill order is listed once the pipeline has stored it (normally milliseconds); until then it is not listed, and GET /api/orders/:id answers it as `processing`. Unknown query parameters are rejected.
         */
        get: {
            parameters: {
                query?: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    voucherId?: string;
                    /** @description most orders returned, an integer 1..200 (default 50) */
                    limit?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            orders: {
                                id: string;
                                voucherId: string;
                                userId: string;
                                quantity: number;
                                status: string;
                                createdAt: string;
                                expiresAt?: string;
                                failureReason?: string;
                                /** @description price × quantity, in minor units of currency */
                                amount: number;
                                currency: string;
                                payment?: {
                                    paymentId: string;
                                    provider: string;
                                    amount: number;
                                    currency: string;
                                    at: string;
                                };
                                refundedAt?: string;
                            }[];
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Server-sent events of your orders
         * @description `text/event-stream`. After the headers: a `: connected` comment (you are subscribed), then per event `event: <type>` and `data: <json>` with type stored, paid, expired, cancelled, failed, promoted, refunded or refund_due and data {type, orderId, voucherId, userId, quantity, status, at}; a `: ping` comment every 15 s. Delivery is at most once (events published while you are not connected are not replayed): poll GET /api/orders to be sure. When your token expires, an `event: token-expired` ({code, message}) and the end of the stream. Past SSE_MAX_PER_USER open streams of yours, or SSE_MAX_STREAMS of this server: 429 TOO_MANY_STREAMS with Retry-After.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description a text/event-stream, until you leave or your token expires */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": string;
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description TOO_MANY_STREAMS: you hold SSE_MAX_PER_USER open streams, or this server SSE_MAX_STREAMS; RATE_LIMITED: the per-address limit; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read one of your orders (`processing` until the pipeline has stored it) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            voucherId: string;
                            userId: string;
                            quantity: number;
                            status: string;
                            createdAt: string;
                            expiresAt?: string;
                            failureReason?: string;
                            /** @description price × quantity, in minor units of currency */
                            amount: number;
                            currency: string;
                            payment?: {
                                paymentId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                at: string;
                            };
                            refundedAt?: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_FOUND: no order of yours has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{id}/pay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pay for your order before it expires (simulated payment; idempotent) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            voucherId: string;
                            userId: string;
                            quantity: number;
                            status: string;
                            createdAt: string;
                            expiresAt?: string;
                            failureReason?: string;
                            /** @description price × quantity, in minor units of currency */
                            amount: number;
                            currency: string;
                            payment?: {
                                paymentId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                at: string;
                            };
                            refundedAt?: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: pay with PAYMENT_MODE=external (payments come from the shop) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_FOUND: no order of yours has this id (an admin acts on its own orders only; the service cancels any) */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_PROCESSING: not stored yet, retry shortly; ORDER_PAID · ORDER_CANCELLED · ORDER_EXPIRED · ORDER_FAILED · ORDER_REFUNDED: the order is already in that state */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel your unpaid order; its units go back on sale (idempotent) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            voucherId: string;
                            userId: string;
                            quantity: number;
                            status: string;
                            createdAt: string;
                            expiresAt?: string;
                            failureReason?: string;
                            /** @description price × quantity, in minor units of currency */
                            amount: number;
                            currency: string;
                            payment?: {
                                paymentId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                at: string;
                            };
                            refundedAt?: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: pay with PAYMENT_MODE=external (payments come from the shop) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_FOUND: no order of yours has this id (an admin acts on its own orders only; the service cancels any) */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_PROCESSING: not stored yet, retry shortly; ORDER_PAID · ORDER_CANCELLED · ORDER_EXPIRED · ORDER_FAILED · ORDER_REFUNDED: the order is already in that state */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{id}/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Confirm a payment of an order (the shop's backend); idempotent on (provider, paymentId) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * Format: text
                         * @description the provider's id of the payment; with provider, what makes a payment the same one again
                         */
                        paymentId: string;
                        /** @description minor units paid */
                        amount: number;
                        /** @description ISO 4217, compared case-insensitively */
                        currency: string;
                        /**
                         * Format: text
                         * @default shop
                         */
                        provider?: string;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            voucherId: string;
                            userId: string;
                            quantity: number;
                            status: string;
                            createdAt: string;
                            expiresAt?: string;
                            failureReason?: string;
                            /** @description price × quantity, in minor units of currency */
                            amount: number;
                            currency: string;
                            payment?: {
                                paymentId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                at: string;
                            };
                            refundedAt?: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has neither the service nor the admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_FOUND: no order has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_PROCESSING: not stored yet, retry (nothing kept); ORDER_EXPIRED · ORDER_CANCELLED · ORDER_FAILED (late) · ORDER_PAID · ORDER_REFUNDED (duplicate) · PAYMENT_MISMATCH: not applied, the payment kept as refund_due with `reason` */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{id}/refund": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Refund a paid order; its units back on sale unless restock is false (idempotent) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description units back on sale while it is open (default true) */
                        restock?: boolean;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            voucherId: string;
                            userId: string;
                            quantity: number;
                            status: string;
                            createdAt: string;
                            expiresAt?: string;
                            failureReason?: string;
                            /** @description price × quantity, in minor units of currency */
                            amount: number;
                            currency: string;
                            payment?: {
                                paymentId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                at: string;
                            };
                            refundedAt?: string;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has neither the service nor the admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_FOUND: no order has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_NOT_PAID: pending_payment or processing; ORDER_CANCELLED · ORDER_EXPIRED · ORDER_FAILED: never paid */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Payments, newest first; ?status=refund_due lists the money to give back */
        get: {
            parameters: {
                query?: {
                    status?: "refund_due" | "applied";
                    /** @description most payments returned, 1..500 (default 100) */
                    limit?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            payments: {
                                paymentId: string;
                                orderId: string;
                                provider: string;
                                amount: number;
                                currency: string;
                                status: string;
                                reason: string | null;
                                at: string;
                            }[];
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/waitlist/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your 1-based position on the waitlist (404 NOT_WAITLISTED when you are not on it) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            position: number;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description NOT_WAITLISTED: you are not on its waitlist; VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/queue": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The queue as anyone sees it: the commitment, then the seed, and how many entered, were admitted and closed */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description sha256 of the seed (hex), published before anyone joins */
                            commitment: string;
                            /** @description the seed (hex), published with the draw */
                            seed: string | null;
                            drawnAt: string | null;
                            /** @description buyers in the pre-queue (the drawn ones, after the draw) */
                            entrants: number;
                            /** @description buyers who joined after the start, placed after the drawn ones in arrival order */
                            appended: number;
                            /** @description places admitted so far */
                            admitted: number;
                            /** @description places the draw admitted (the first ones) */
                            drawAdmitted: number;
                            /** @description places still waiting when the queue closed (0 while open) */
                            closed: number;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly) */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        /**
         * Join a queue voucher's queue (one place per buyer; joining again returns the same place)
         * @description Before the start: the pre-queue, shuffled by the draw at beginAt (position null until then). After it: appended in arrival order. 409 NOT_STARTED before queue.opensAt, ENDED after endAt, SOLD_OUT once the queue closed.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            state: "prequeue" | "waiting" | "admitted" | "closed";
                            position: number | null;
                            ahead: number | null;
                            etaSeconds: number | null;
                            orderId: string | null;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly) */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description NOT_STARTED: the queue opens later (opensAt); ENDED: the sale ended; SOLD_OUT: the queue is closed, no unit can come back */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/queue/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your place in the queue (404 NOT_IN_QUEUE when you are not in it: join) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            state: "prequeue" | "waiting" | "admitted" | "closed";
                            position: number | null;
                            ahead: number | null;
                            etaSeconds: number | null;
                            orderId: string | null;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description NOT_IN_QUEUE: you are not in this queue (never joined, or joined just before Redis lost its data: join again); VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/queue/entrants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The drawn entrants by place, once the draw is published (empty before); page with ?after=<last place> */
        get: {
            parameters: {
                query?: {
                    /** @description the last place of the previous page (default 0) */
                    after?: string;
                    /** @description most entrants returned, 1..10000 (default 1000) */
                    limit?: string;
                };
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            entrants: {
                                position: number;
                                userId: string;
                            }[];
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly) */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The invariants of the voucher on both stores, safe on a live system (admin)
         * @description POST with {admitted: [orderId…]} also checks that each of those orders is stored (I3).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ok: boolean;
                            checks: {
                                id: string;
                                name: string;
                                ok: boolean;
                                problems: string[];
                            }[];
                            initialStock: number;
                            dbStock: number;
                            redisStock: number | null;
                            sold: number;
                            orders: {
                                [key: string]: number;
                            };
                            inflight: number;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        /**
         * The invariants of the voucher on both stores, safe on a live system (admin)
         * @description POST with {admitted: [orderId…]} also checks that each of those orders is stored (I3).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        admitted?: string[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ok: boolean;
                            checks: {
                                id: string;
                                name: string;
                                ok: boolean;
                                problems: string[];
                            }[];
                            initialStock: number;
                            dbStock: number;
                            redisStock: number | null;
                            sold: number;
                            orders: {
                                [key: string]: number;
                            };
                            inflight: number;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 64 MiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Stock in both stores, orders by status, in-flight orders, waitlist and dead letters (admin) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            initialStock: number;
                            dbStock: number;
                            redisStock: number | null;
                            inFlight: number;
                            orders: {
                                pending_payment: number;
                                paid: number;
                                cancelled: number;
                                expired: number;
                                failed: number;
                                refunded: number;
                            };
                            waitlist: number;
                            deadLetters: number;
                            /** @description payments of the voucher's orders kept refund_due (GET /api/payments?status=refund_due) */
                            refundDue: number;
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/live": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The operator console's live view of one voucher: server-sent events, one snapshot a second (admin)
         * @description `text/event-stream` of `event: snapshot` with data {at, stats (as GET /stats), claimsPerSecond: {outcome: n} (all vouchers, from seckill_claims_total of /metrics), admissionsPerSecond (this voucher, from the stores), audit?: {ok, failed: [{name, problem}], at} (on the first snapshot and every 10th)}; `event: error` with {code, message} when a snapshot failed (the stream goes on); `event: token-expired` and the end when your token expires. Unknown voucher: 404 before the stream starts; past the stream caps (SSE_MAX_PER_USER, SSE_MAX_STREAMS): 429 TOO_MANY_STREAMS.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description a text/event-stream, until you leave or your token expires */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": string;
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description TOO_MANY_STREAMS: you hold SSE_MAX_PER_USER open streams, or this server SSE_MAX_STREAMS; RATE_LIMITED: the per-address limit; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/vouchers/{id}/reconcile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reconcile one voucher now: drift found and repaired (admin)
         * @description `verified: false` means Redis kept changing during the comparison; counts were not judged this time. Stock and orders in flight are compared every time; buyer counts a slice of at most 10,000 per call, the next slice the next time (`buyers`), or all of them with `allBuyers=true`.
         */
        post: {
            parameters: {
                query?: {
                    allBuyers?: boolean;
                };
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            voucherId: string;
                            verified: boolean;
                            repaired: number;
                            drift: {
                                kind: string;
                                detail: string;
                                repaired: boolean;
                            }[];
                            buyers: {
                                compared: number;
                                all: boolean;
                            };
                        };
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired) */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description FORBIDDEN: the bearer token has no admin role */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description VOUCHER_NOT_FOUND: no voucher has this id */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 16 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/console": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The operator console; it signs in with an admin bearer token */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the page (HTML) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/html": string;
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/store/{voucherId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An example buyer's page of a voucher; it signs in with a user bearer token */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description positive 64-bit integer (1 to 9223372036854775807) as a decimal string */
                    voucherId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the page (HTML) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/html": string;
                    };
                };
                /** @description INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what) */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/payments/stripe": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stripe's webhook: payment_intent.succeeded, checkout.session.completed (paid) and charge.refunded, verified by the Stripe-Signature header */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description the event was verified; applied or not, Stripe need not deliver it again */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            eventId: string;
                            /** @description what the event did: applied, refund_due, refunded, held, replayed, or why it changed nothing */
                            outcome: string;
                        };
                    };
                };
                /** @description INVALID_SIGNATURE: the Stripe-Signature header is missing, does not sign the body with STRIPE_WEBHOOK_SECRET (or none is set), or is older than 300 s; INVALID_REQUEST: a signed body that is not a Stripe event */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description ORDER_PROCESSING: the order is not stored yet; Stripe delivers the event again */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description PAYLOAD_TOO_LARGE: the body exceeds 256 KiB */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After */
                429: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After */
                503: {
                    headers: {
                        /** @description seconds to wait before retrying */
                        "retry-after"?: number;
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            code: string;
                            message: string;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: never;
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
