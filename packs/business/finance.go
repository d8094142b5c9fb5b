package businesspack

// The finance tools: what the business spends, and the money reports.
const (
	AddExpense               = "finance.add_expense"
	GenerateCashflowSnapshot = "finance.generate_cashflow_snapshot"
	GeneratePnLSnapshot      = "finance.generate_pnl_snapshot"
)

// FinanceTools are the finance tools, in the registry's order.
var FinanceTools = []string{AddExpense, GenerateCashflowSnapshot, GeneratePnLSnapshot}

// FinanceSnapshotInput is the input of the money reports (finance.generate_cashflow_snapshot and
// finance.generate_pnl_snapshot): the days they count, both left out for the tool's default.
type FinanceSnapshotInput struct {
	From Date `json:"from,omitzero"`
	To   Date `json:"to,omitzero"`
}

// FinanceTally is an amount of money and how many records make it up.
type FinanceTally struct {
	AmountCents int64 `json:"amount_cents"`
	Count       int   `json:"count"`
}

// DayTally is the money of one day.
type DayTally struct {
	Date Date `json:"date"`
	FinanceTally
}

// WeekTally is the money of the week starting on a Monday.
type WeekTally struct {
	WeekStart Date `json:"week_start"`
	FinanceTally
}

// MethodTally is the money paid one way (bank transfer, card, …).
type MethodTally struct {
	Method string `json:"method"`
	FinanceTally
}

// CategoryTally is the money spent on one category of expense, direct (the work) or an overhead.
type CategoryTally struct {
	Category string `json:"category"`
	CostType string `json:"cost_type"`
	FinanceTally
}

// CashIn is the money that came in over a report's days: payments, by method (biggest first), day and week.
type CashIn struct {
	TotalCents int64         `json:"total_cents"`
	Count      int           `json:"count"`
	ByMethod   []MethodTally `json:"by_method"`
	ByDay      []DayTally    `json:"by_day"`
	ByWeek     []WeekTally   `json:"by_week"`
}

// CashOut is the money that went out over a report's days: expenses, GST included, by category.
type CashOut struct {
	TotalCents int64           `json:"total_cents"`
	GSTCents   int64           `json:"gst_cents"`
	Count      int             `json:"count"`
	ByCategory []CategoryTally `json:"by_category"`
}

// CashMonth is one month (YYYY-MM) of a cash flow report.
type CashMonth struct {
	Month        string `json:"month"`
	CashInCents  int64  `json:"cash_in_cents"`
	CashOutCents int64  `json:"cash_out_cents"`
	NetCents     int64  `json:"net_cents"`
}

// Receivables are what customers owed at the end of a report's days (AsOf).
type Receivables struct {
	AsOf             Date  `json:"as_of"`
	OutstandingCents int64 `json:"outstanding_cents"`
	OutstandingCount int   `json:"outstanding_count"`
	OverdueCents     int64 `json:"overdue_cents"`
	OverdueCount     int   `json:"overdue_count"`
}

// CashflowSummary is a cash flow report: its days, the money in and out, each month, and the
// receivables.
type CashflowSummary struct {
	From        Date        `json:"from"`
	To          Date        `json:"to"`
	Currency    string      `json:"currency"`
	CashIn      CashIn      `json:"cash_in"`
	CashOut     CashOut     `json:"cash_out"`
	NetCents    int64       `json:"net_cents"`
	ByMonth     []CashMonth `json:"by_month"`
	Receivables Receivables `json:"receivables"`
}

// FinanceCashflowSnapshotOutput is finance.generate_cashflow_snapshot's result.
type FinanceCashflowSnapshotOutput struct {
	Summary CashflowSummary `json:"summary"`
}

// PnLMonth is one month (YYYY-MM) of a profit and loss report.
type PnLMonth struct {
	Month             string `json:"month"`
	InvoiceCount      int    `json:"invoice_count"`
	RevenueCents      int64  `json:"revenue_cents"`
	GSTCollectedCents int64  `json:"gst_collected_cents"`
	DirectCostsCents  int64  `json:"direct_costs_cents"`
	OverheadsCents    int64  `json:"overheads_cents"`
	GrossProfitCents  int64  `json:"gross_profit_cents"`
	NetProfitCents    int64  `json:"net_profit_cents"`
}

// PnLSummary is a profit and loss report over its days: revenue is what was invoiced, without
// GST; costs are expenses without GST. The gross margin is nil without revenue.
type PnLSummary struct {
	From                   Date            `json:"from"`
	To                     Date            `json:"to"`
	Currency               string          `json:"currency"`
	InvoiceCount           int             `json:"invoice_count"`
	InvoicedTotalCents     int64           `json:"invoiced_total_cents"`
	RevenueCents           int64           `json:"revenue_cents"`
	GSTCollectedCents      int64           `json:"gst_collected_cents"`
	ExpenseCount           int             `json:"expense_count"`
	ExpensesCents          int64           `json:"expenses_cents"`
	ExpenseGSTCents        int64           `json:"expense_gst_cents"`
	DirectCostsCents       int64           `json:"direct_costs_cents"`
	OverheadsCents         int64           `json:"overheads_cents"`
	GrossProfitCents       int64           `json:"gross_profit_cents"`
	NetProfitCents         int64           `json:"net_profit_cents"`
	GrossMarginBasisPoints *int64          `json:"gross_margin_basis_points"`
	GSTNetCents            int64           `json:"gst_net_cents"`
	ExpensesByCategory     []CategoryTally `json:"expenses_by_category"`
	ByMonth                []PnLMonth      `json:"by_month"`
}

// FinancePnLSnapshotOutput is finance.generate_pnl_snapshot's result.
type FinancePnLSnapshotOutput struct {
	Summary PnLSummary `json:"summary"`
}
