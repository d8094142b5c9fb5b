package executor_test

import (
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
)

// insertedID is the id of the one call gemsql.CallInsert made: id, err := insertedID(gemsql.CallInsert(...)).
func insertedID(made []gemsql.Inserted, err error) (uuid.UUID, error) {
	if err != nil {
		return uuid.Nil, err
	}
	return made[0].ID, nil
}

// insertedIDs are the ids of the calls gemsql.CallInsert made, in order.
func insertedIDs(made []gemsql.Inserted, err error) ([]uuid.UUID, error) {
	return gemsql.InsertedIDs(made), err
}
