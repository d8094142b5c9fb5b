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
// finance.generate_pnl_snapshot): the days they count (2006-01-02), both left out for the tool's default.
type FinanceSnapshotInput struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// CashTotal is money in or out over a report's days.
type CashTotal struct {
	TotalCents int64 `json:"total_cents"`
}

// CashflowSummary is a cash flow report's summary (what the answer reads of it).
type CashflowSummary struct {
	From     string    `json:"from"`
	To       string    `json:"to"`
	CashIn   CashTotal `json:"cash_in"`
	CashOut  CashTotal `json:"cash_out"`
	NetCents int64     `json:"net_cents"`
}

// FinanceCashflowSnapshotOutput is finance.generate_cashflow_snapshot's result.
type FinanceCashflowSnapshotOutput struct {
	Summary CashflowSummary `json:"summary"`
}

// PnLSummary is a profit and loss report's summary (what the answer reads of it).
type PnLSummary struct {
	From             string `json:"from"`
	To               string `json:"to"`
	RevenueCents     int64  `json:"revenue_cents"`
	GrossProfitCents int64  `json:"gross_profit_cents"`
	NetProfitCents   int64  `json:"net_profit_cents"`
}

// FinancePnLSnapshotOutput is finance.generate_pnl_snapshot's result.
type FinancePnLSnapshotOutput struct {
	Summary PnLSummary `json:"summary"`
}
