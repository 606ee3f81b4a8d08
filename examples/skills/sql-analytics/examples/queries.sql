-- Example analytical queries for the sales warehouse.
-- Schema and metric definitions: ../references/schema.md
-- Dialect: PostgreSQL. Dates are half-open ranges: >= start AND < end.


-- 1. Monthly net revenue, orders and AOV for 2024 -------------------------
-- Grain: one row per month. Items are aggregated per order first so that
-- order-level columns are never multiplied by the number of lines.
WITH valid_orders AS (
    SELECT o.order_id, o.order_date
    FROM sales.orders AS o
    JOIN sales.customers AS c ON c.customer_id = o.customer_id
    WHERE o.order_date >= DATE '2024-01-01'
      AND o.order_date <  DATE '2025-01-01'
      AND o.status NOT IN ('cancelled', 'refunded')
      AND NOT c.is_test
),
order_revenue AS (
    SELECT oi.order_id, SUM(oi.line_amount_usd) AS net_revenue_usd
    FROM sales.order_items AS oi
    JOIN valid_orders AS vo ON vo.order_id = oi.order_id
    GROUP BY oi.order_id
)
SELECT
    DATE_TRUNC('month', vo.order_date)::date          AS month,
    COUNT(*)                                          AS orders,
    ROUND(SUM(r.net_revenue_usd), 2)                  AS net_revenue_usd,
    ROUND(SUM(r.net_revenue_usd) / NULLIF(COUNT(*), 0), 2) AS aov_usd
FROM valid_orders AS vo
JOIN order_revenue AS r ON r.order_id = vo.order_id
GROUP BY 1
ORDER BY 1;


-- 2. Month-over-month growth of net revenue -------------------------------
WITH monthly AS (
    SELECT
        DATE_TRUNC('month', o.order_date)::date AS month,
        SUM(oi.line_amount_usd)                 AS net_revenue_usd
    FROM sales.orders AS o
    JOIN sales.customers   AS c  ON c.customer_id = o.customer_id
    JOIN sales.order_items AS oi ON oi.order_id   = o.order_id
    WHERE o.order_date >= DATE '2024-01-01'
      AND o.order_date <  DATE '2025-01-01'
      AND o.status NOT IN ('cancelled', 'refunded')
      AND NOT c.is_test
    GROUP BY 1
)
SELECT
    month,
    net_revenue_usd,
    LAG(net_revenue_usd) OVER (ORDER BY month) AS prev_month_usd,
    ROUND(100.0 * (net_revenue_usd - LAG(net_revenue_usd) OVER (ORDER BY month))
          / NULLIF(LAG(net_revenue_usd) OVER (ORDER BY month), 0), 1) AS mom_growth_pct
FROM monthly
ORDER BY month;


-- 3. Top 3 products by net revenue in each category, Q1 2024 --------------
-- ROW_NUMBER breaks ties arbitrarily; use RANK() to keep ties.
WITH product_revenue AS (
    SELECT
        p.category,
        p.product_id,
        p.name,
        SUM(oi.line_amount_usd) AS net_revenue_usd,
        SUM(oi.quantity)        AS units
    FROM sales.order_items AS oi
    JOIN sales.orders    AS o ON o.order_id    = oi.order_id
    JOIN sales.customers AS c ON c.customer_id = o.customer_id
    JOIN sales.products  AS p ON p.product_id  = oi.product_id
    WHERE o.order_date >= DATE '2024-01-01'
      AND o.order_date <  DATE '2024-04-01'
      AND o.status NOT IN ('cancelled', 'refunded')
      AND NOT c.is_test
    GROUP BY p.category, p.product_id, p.name
),
ranked AS (
    SELECT
        pr.*,
        ROW_NUMBER() OVER (PARTITION BY category ORDER BY net_revenue_usd DESC) AS rn
    FROM product_revenue AS pr
)
SELECT category, rn AS rank, product_id, name, units, net_revenue_usd
FROM ranked
WHERE rn <= 3
ORDER BY category, rn;


-- 4. Monthly retention by first-order cohort ------------------------------
-- Grain: cohort month x months since first order.
WITH valid_orders AS (
    SELECT o.customer_id, o.order_date
    FROM sales.orders AS o
    JOIN sales.customers AS c ON c.customer_id = o.customer_id
    WHERE o.status NOT IN ('cancelled', 'refunded')
      AND NOT c.is_test
),
first_orders AS (
    SELECT customer_id, DATE_TRUNC('month', MIN(order_date))::date AS cohort_month
    FROM valid_orders
    GROUP BY customer_id
),
activity AS (
    SELECT DISTINCT
        f.customer_id,
        f.cohort_month,
        (EXTRACT(YEAR  FROM AGE(DATE_TRUNC('month', v.order_date), f.cohort_month)) * 12
       + EXTRACT(MONTH FROM AGE(DATE_TRUNC('month', v.order_date), f.cohort_month)))::int
            AS months_since_first
    FROM first_orders AS f
    JOIN valid_orders AS v ON v.customer_id = f.customer_id
),
cohort_size AS (
    SELECT cohort_month, COUNT(*) AS customers
    FROM first_orders
    GROUP BY cohort_month
)
SELECT
    a.cohort_month,
    s.customers                                   AS cohort_customers,
    a.months_since_first,
    COUNT(*)                                      AS active_customers,
    ROUND(100.0 * COUNT(*) / s.customers, 1)      AS retention_pct
FROM activity AS a
JOIN cohort_size AS s ON s.cohort_month = a.cohort_month
WHERE a.cohort_month >= DATE '2024-01-01'
GROUP BY a.cohort_month, s.customers, a.months_since_first
ORDER BY a.cohort_month, a.months_since_first;


-- 5. Customers with no valid order in the last 90 days (churn risk) -------
-- LEFT JOIN keeps customers who never ordered; the status filter is in the
-- ON clause so it does not turn the LEFT JOIN into an INNER JOIN.
SELECT
    c.customer_id,
    c.segment,
    c.country_code,
    MAX(o.order_date) AS last_order_date
FROM sales.customers AS c
LEFT JOIN sales.orders AS o
       ON o.customer_id = c.customer_id
      AND o.status NOT IN ('cancelled', 'refunded')
WHERE NOT c.is_test
GROUP BY c.customer_id, c.segment, c.country_code
HAVING MAX(o.order_date) IS NULL
    OR MAX(o.order_date) < CURRENT_DATE - 90
ORDER BY last_order_date NULLS FIRST;


-- 6. Grain check: order_id is unique in orders (should return 0 rows) ----
-- Wrap any CTE or query the same way to verify its grain before using it.
SELECT order_id, COUNT(*) AS n
FROM sales.orders
GROUP BY order_id
HAVING COUNT(*) > 1;
